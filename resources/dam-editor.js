/*
 * DamEditor: editor code shared by the @dam-assets/node-red nodes.
 *
 * Served by Node-RED from this package's resources/ folder; each editor file loads it with
 *   <script src="resources/@dam-assets/node-red/dam-editor.js"></script>
 * It may be loaded several times (once per editor file): it defines window.DamEditor once.
 *
 * API (all list values are the strings sent to the server, spec 2.1):
 *
 *   DamEditor.adminPathClash(path, httpNodeRoot, httpAdminRoot)
 *                                  the editor route an asset-event-in path would take over, or
 *                                  undefined (copy of src/nodes/asset-event-in/admin-paths.ts);
 *                                  DamEditor.editorRoot() is httpAdminRoot as the editor sees it.
 *   DamEditor.SUBSCRIPTION_ID      RegExp of a subscription id: 8 to 40 of a-z A-Z 0-9 and hyphen.
 *   DamEditor.HEADER_NAME          RegExp of an HTTP header name (an RFC 9110 token).
 *                                  Both are browser copies of src/api/values.ts;
 *                                  test/api/editor-rules.test.js fails when they differ.
 *   DamEditor.validateSubscriptionId(value)
 *                                  true, or a short error text.
 *   DamEditor.subscriptionIdValidator(typeField)
 *                                  a `defaults.<prop>.validate` function for a TypedInput whose
 *                                  type is stored in `typeField`: checks the id only when the
 *                                  type is `str` and the value is not empty.
 *   DamEditor.headerList(container, values)        values like "Name: value"
 *   DamEditor.queryParamList(container, values)    values like "name=value"
 *   DamEditor.pathList(container, values)          values like "* /dir", "+ /dir", "- /dir", "/dir/file"
 *                                                  (prefix dropdown: none, *, +, -; then a path)
 *   DamEditor.metadataList(container, values)      values like "Key=Value", "Key==*", "*==*"
 *                                  Each turns `container` (an <ol>, selector or jQuery) into an
 *                                  editable list filled with `values` (array of strings).
 *   DamEditor.fieldTypes           TypedInput type lists of request fields: `text`, `number`, `bool`, `id`
 *                                  (a fixed value, then msg, flow, global, env, jsonata).
 *   DamEditor.typedField(name, types)
 *                                  makes #node-input-<name> a TypedInput whose type is kept in
 *                                  #node-input-<name>Type; `types` is a fieldTypes key or an array.
 *   DamEditor.validateInFlight(value)
 *                                  true, or a short error text: "Parallel requests" is blank (the
 *                                  default, 2) or a whole number from 1 to 32.
 *   DamEditor.validateRetries(value)
 *                                  true, or a short error text: "Retries" is blank (0, as flows
 *                                  saved before the setting) or a whole number from 0 to 10
 *                                  (retriesSetting of src/nodes/shared/retry.ts).
 *   DamEditor.baseUrl(value)      true when the client takes it as its base URL (parseBaseUrl of
 *                                  src/api/client-options.ts): an absolute http:// or https:// URL
 *                                  with a host, spaces around allowed, no query (?) or fragment (#).
 *   DamEditor.timeoutSetting(value)
 *                                  true when the asset-server takes it as its timeout (timeoutSeconds
 *                                  of src/nodes/asset-server/options.ts): blank, or a number >= 0.
 *                                  Both checked against the source by test/house/rules.test.js.
 *   DamEditor.isBlankSetting(value)
 *                                  true when a setting is unset, empty or only spaces: the runtime
 *                                  then uses its default (isBlankSetting of src/nodes/shared/fields.ts).
 *   DamEditor.numberSetting(value, check)
 *                                  true when the runtime's numberSetting takes the value: blank, or
 *                                  a finite number (text allowed) for which check(n) is true.
 *   DamEditor.headerNameSetting(value)
 *                                  true when the runtime takes it as a secret header's name: blank
 *                                  (the default), or a header name with spaces around it, not one
 *                                  whose value is shown (Content-Type, Accept, User-Agent, ...).
 *                                  These three and validateInFlight are checked against the
 *                                  runtime by test/api/editor-rules.test.js.
 *   DamEditor.callbackMethodMismatch(subscription, eventIns, here)
 *                                  { nodeId, nodeName, path, eventInMethod, subscriptionMethod } when
 *                                  subscription.callback points at one of eventIns (asset-event-in
 *                                  configs: id, name, path, method) of this Node-RED (loopback host,
 *                                  here.uiPort, or one of here.publicBaseUrls) under here.httpNodeRoot
 *                                  and subscription.method (blank: GET, the spec's default) differs;
 *                                  else undefined. Browser copy of src/plugin/callback-method.ts
 *                                  (test/nodes/callback-method.test.js runs both on the same cases).
 *   DamEditor.subscribeMethodWarning(callback, callbackType, method)
 *                                  the asset-subscribe dialog's warning text, or "" (uses the
 *                                  editor's asset-event-in and asset-server nodes).
 *   DamEditor.literalRules        kind -> check(value, type) of a fixed value of a request field, as
 *                                  the nodes read it (src/nodes/shared/fields.ts) and the client checks it
 *                                  (src/api/validate.ts): `id` (fuid, Folder fuid, collection: an integer
 *                                  >= 0), `rrn` (>= -1), `count` (retryCount, >= 0), `code` (successCode,
 *                                  100 to 599), `minutes` (a number >= 0), `callback` (an absolute http(s)
 *                                  URL); type `num` (Node-RED makes it a number) or `str` (sent as typed).
 *                                  test/api/editor-rules.test.js runs them beside the source.
 *   DamEditor.literalField(typeField, kind)
 *                                  a TypedInput's `validate`: Node-RED's check of its type, then for a
 *                                  fixed (`num` or `str`) value that is not blank literalRules[kind],
 *                                  with the error text errors.<kind>.
 *   DamEditor.current(node, name)
 *                                  a flow node's setting as its open dialog shows it while it is being
 *                                  edited (a checkbox: true or false), else as saved (for validators
 *                                  that read another setting).
 *   DamEditor.selectOnlyServer(node)
 *                                  a new node's `onadd`: when its Server is blank and exactly one
 *                                  asset-server exists, picks it (else a node dropped in and
 *                                  deployed without opening its dialog is "not properly configured").
 *   DamEditor.fillRows(type)       puts the shared rows (server, name, retries, maxInFlight, upload-fields) in place of
 *                                  <div data-dam-row="..."></div> in the template, before registerType (the editor
 *                                  fills inputs before oneditprepare); DamEditor.uploadFields() makes their TypedInputs.
 *   DamEditor.readList(container)  the list's values as an array of strings, empty rows left out.
 *                                  Works for all four lists. (readPathList, readHeaderList,
 *                                  readQueryParamList and readMetadataList are the same function.)
 *
 * Strings come from the asset-server node's catalogue (keys `asset-server.editor.*`), which is
 * always installed with this package.
 */
(function () {
    "use strict";
    if (window.DamEditor) { return; }

    var NS = "@dam-assets/node-red/asset-server:asset-server.editor.";
    var SUBSCRIPTION_ID = /^[A-Za-z0-9-]{8,40}$/;
    var HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
    var PATH_PREFIXES = ["", "*", "+", "-"];

    function t(key) { return RED._(NS + key); }

    function validateSubscriptionId(value) {
        if (typeof value !== "string" || !SUBSCRIPTION_ID.test(value)) {
            return t("errors.subscriptionId");
        }
        return true;
    }

    function subscriptionIdValidator(typeField) {
        return function (v) {
            var type = $("#node-input-" + typeField).val() || this[typeField] || "str";
            if (type !== "str" || v === "" || v === undefined) { return true; }
            return validateSubscriptionId(v);
        };
    }

    function baseUrl(value) {
        if (typeof value !== "string" || value.trim() === "" || /[?#]/.test(value) || /\s/.test(value.trim())) { return false; }
        var url;
        try { url = new URL(value.trim()); } catch (e) { return false; }
        // No user:password@: it would be stored and shown in plain text (issue 22).
        return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "" && url.username === "" && url.password === "";
    }

    function timeoutSetting(value) {
        return numberSetting(value, function (n) { return n >= 0; });
    }

    function isBlankSetting(value) {
        return value === undefined || value === null || (typeof value === "string" && value.trim() === "");
    }

    function numberSetting(value, check) {
        if (isBlankSetting(value)) { return true; }
        var n = Number(value);
        return isFinite(n) && check(n) === true;
    }

    /** Headers whose value get and the DAM tab show (PUBLIC_HEADER of src/nodes/shared/masking.ts): no name for a secret. */
    var SHOWN_HEADER = /^(content-type|content-language|content-encoding|accept|accept-language|accept-encoding|accept-charset|cache-control|user-agent)$/i;

    function headerNameSetting(value) {
        return isBlankSetting(value) || (HEADER_NAME.test(String(value).trim()) && !SHOWN_HEADER.test(String(value).trim()));
    }

    function validateInFlight(value) {
        if (isBlankSetting(value)) { return true; }
        var n = Number(value);
        return (/^\s*\d+\s*$/.test(String(value)) && n >= 1 && n <= 32) || t("errors.maxInFlight");
    }

    function validateRetries(value) {
        if (isBlankSetting(value)) { return true; }
        var n = Number(value);
        return (/^\s*\d+\s*$/.test(String(value)) && n >= 0 && n <= 10) || t("errors.retries");
    }

    var INTEGER_TEXT = /^\s*-?\d+\s*$/;
    function integerIn(min, max) {
        return function (value, type) {
            if (type === "num") {
                var n = Number(value);
                return Number.isSafeInteger(n) && n >= min && (max === undefined || n <= max);
            }
            if (!INTEGER_TEXT.test(String(value))) { return false; }
            var big = BigInt(String(value).trim());
            return big >= BigInt(min) && (max === undefined || big <= BigInt(max));
        };
    }
    var LITERAL_RULES = {
        id: integerIn(0),
        rrn: integerIn(-1),
        count: integerIn(0),
        code: integerIn(100, 599),
        minutes: function (value, type) {
            var n = type === "num" ? Number(value) : (/^\s*-?(\d+\.?\d*|\.\d+)\s*$/.test(String(value)) ? Number(value) : NaN);
            return isFinite(n) && n >= 0;
        },
        callback: function (value) {
            var text = String(value);
            if (!/^https?:\/\/[^/?#]/i.test(text) || text.indexOf("\\") !== -1 || /\s/.test(text)) { return false; }
            var url;
            try { url = new URL(text); } catch (e) { return false; }
            return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
        }
    };

    var ENV_VAR = /^(\$\{[^}]+\}|\$\([^)]+\))$/;

    /**
     * A setting as `node`'s dialog shows it while the node is being edited (also under a config
     * node's dialog opened from it), else as saved: another node's open dialog may have a field of
     * the same id (Node-RED validates a config node's users when the config node is saved).
     */
    function current(node, name) {
        var stack = RED.editor && typeof RED.editor.getEditStack === "function" ? RED.editor.getEditStack() : [];
        var open = stack.some(function (n) { return n === node || (n && node && n.id === node.id); });
        var field = open ? $("#node-input-" + name) : $();
        if (!field.length) { return node[name]; }
        return field.is(":checkbox") ? field.is(":checked") : field.val();
    }

    function literalField(typeField, kind) {
        var typed;
        return function (v, opt) {
            typed = typed || RED.validators.typedInput({ typeField: typeField, allowBlank: true });
            var ok = typed.call(this, v, opt);
            if (ok !== true) { return ok; }
            var type = current(this, typeField) || this[typeField];
            // ${VAR} (or $(VAR)): Node-RED puts the variable's value in at deploy; the runtime checks that.
            if ((type !== "num" && type !== "str") || isBlankSetting(v) || ENV_VAR.test(String(v).trim())) { return true; }
            return LITERAL_RULES[kind](v, type) || t("errors." + kind);
        };
    }

    function textInput(row, cls, placeholder, value, flex) {
        return $("<input/>", { type: "text", class: cls, placeholder: placeholder })
            .css({ flex: flex || "1 1 auto", minWidth: 0, marginLeft: row.children().length ? "6px" : 0 })
            .val(value || "")
            .appendTo(row);
    }

    function rowOf(container) {
        return $("<div/>").css({ display: "flex", alignItems: "center", width: "100%" }).appendTo(container);
    }

    /** Turns `container` into an editable list; buildRow(row, value) returns a function reading the row. */
    function makeList(container, values, buildRow) {
        var list = $(container);
        list.css({ "min-height": "120px", "min-width": "420px" }).editableList({
            addItem: function (itemContainer, index, data) {
                var value = typeof data === "string" ? data : "";
                itemContainer.data("damRead", buildRow(rowOf(itemContainer), value));
            },
            removable: true,
            sortable: true,
            addButton: t("list.add")
        });
        (values || []).forEach(function (v) { list.editableList("addItem", v); });
        return list;
    }

    function readList(container) {
        var result = [];
        $(container).editableList("items").each(function () {
            var read = $(this).data("damRead");
            var value = read ? read() : "";
            if (value) { result.push(value); }
        });
        return result;
    }

    function headerList(container, values) {
        return makeList(container, values, function (row, value) {
            var colon = value.indexOf(":");
            var name = textInput(row, "dam-header-name", t("list.headerName"), colon < 0 ? value : value.slice(0, colon).trim(), "1 1 40%");
            var val = textInput(row, "dam-header-value", t("list.headerValue"), colon < 0 ? "" : value.slice(colon + 1).trim(), "1 1 60%");
            return function () {
                var n = name.val().trim();
                return n ? n + ": " + val.val().trim() : "";
            };
        });
    }

    function queryParamList(container, values) {
        return makeList(container, values, function (row, value) {
            var input = textInput(row, "dam-query-param", t("list.queryParam"), value);
            return function () { return input.val().trim(); };
        });
    }

    function pathList(container, values) {
        return makeList(container, values, function (row, value) {
            var match = /^([*+-])\s+(.*)$/.exec(value);
            var select = $("<select/>", { class: "dam-path-prefix" }).css({ flex: "0 0 150px" }).appendTo(row);
            PATH_PREFIXES.forEach(function (p) {
                $("<option/>").val(p).text(t("list.prefix." + ({ "": "none", "*": "any", "+": "plus", "-": "minus" })[p])).appendTo(select);
            });
            select.val(match ? match[1] : "");
            var input = textInput(row, "dam-path", t("list.path"), match ? match[2] : value);
            return function () {
                var path = input.val().trim();
                if (!path) { return ""; }
                return select.val() ? select.val() + " " + path : path;
            };
        });
    }

    function metadataList(container, values) {
        return makeList(container, values, function (row, value) {
            var input = textInput(row, "dam-metadata", t("list.metadata"), value);
            return function () { return input.val().trim(); };
        });
    }

    // Every request field: a fixed value, or read from msg/flow/global/env/JSONata at run time.
    var SOURCES = ["msg", "flow", "global", "env", "jsonata"];
    var FIELD_TYPES = {
        text: ["str"].concat(SOURCES),
        number: ["num"].concat(SOURCES),
        bool: ["bool"].concat(SOURCES),
        id: ["num", "str"].concat(SOURCES)
    };

    function typedField(name, types) {
        return $("#node-input-" + name).typedInput({
            typeField: "#node-input-" + name + "Type",
            types: Array.isArray(types) ? types : FIELD_TYPES[types]
        });
    }

    // Browser copy of src/nodes/asset-event-in/admin-paths.ts (test/api/editor-rules.test.js compares them).
    var ADMIN_ROUTE_SEGMENTS = [
        "auth", "flows", "flow", "nodes", "context", "settings", "plugins", "diagnostics",
        "icons", "resources", "theme", "projects", "locales", "library", "credentials",
        "red", "vendor", "types", "favicon.ico", "comms",
        "inject", "debug", "udp-ports", "dam-assets"
    ];
    function normaliseRoutePath(path) {
        return ("/" + path).replace(/\/{2,}/g, "/").replace(/(.)\/$/, "$1").toLowerCase();
    }
    /** The editor route an asset-event-in path would take over (httpAdminRoot + segment), or undefined. */
    function adminPathClash(path, httpNodeRoot, httpAdminRoot) {
        if (httpAdminRoot === false || httpNodeRoot === false) { return undefined; }
        var adminRoot = normaliseRoutePath(httpAdminRoot || "/");
        var full = normaliseRoutePath((httpNodeRoot || "/") + "/" + path);
        var prefix = adminRoot === "/" ? "/" : adminRoot + "/", pattern = full.search(/[:*(?+]/);
        if (pattern >= 0 && pattern < prefix.length && adminRoot.indexOf(full.slice(0, pattern)) === 0) { return adminRoot + " (the editor)"; }
        if (full !== adminRoot && full.indexOf(prefix) !== 0) { return undefined; }
        var first = full.slice(prefix.length).split("/")[0];
        if (first === "") { return adminRoot + " (the editor)"; }
        if (/[:*(?+]/.test(first) || ADMIN_ROUTE_SEGMENTS.indexOf(first) >= 0) { return prefix + first; }
        return undefined;
    }
    /** The editor is served at httpAdminRoot: its page's folder. */
    function editorRoot() {
        return typeof location === "undefined" ? "/" : location.pathname.replace(/[^/]*$/, "");
    }


    var LOOPBACK = { "127.0.0.1": true, "localhost": true, "[::1]": true, "::1": true };

    function urlOf(text) {
        if (typeof text !== "string") { return undefined; }
        try {
            var url = new URL(text.trim());
            return url.protocol === "http:" || url.protocol === "https:" ? url : undefined;
        } catch (e) { return undefined; }
    }

    function trimSlashes(p) { return p.replace(/\/+$/, "") || "/"; }

    /** "" + httpNodeRoot + path with one slash at each joint (callbackUrl of src/nodes/event-in-settings.ts). */
    function routePath(httpNodeRoot, path) {
        var parts = ["", (httpNodeRoot || "/").replace(/^\/+|\/+$/g, ""), path.replace(/^\/+/, "")];
        return parts.filter(function (p, i) { return i === 0 || p !== ""; }).join("/");
    }

    function callbackMethodMismatch(subscription, eventIns, here) {
        var callback = urlOf(subscription.callback);
        if (!callback) { return undefined; }
        var origins = {};
        (here.publicBaseUrls || []).forEach(function (u) { var url = urlOf(u); if (url) { origins[url.origin] = true; } });
        var port = callback.port || (callback.protocol === "https:" ? "443" : "80");
        var ours = LOOPBACK[callback.hostname] === true || origins[callback.origin] === true ||
            (here.uiPort !== undefined && here.uiPort !== null && String(here.uiPort) === port);
        if (!ours) { return undefined; }
        var method = (typeof subscription.method === "string" && subscription.method.trim() ? subscription.method.trim() : "GET").toUpperCase();
        for (var i = 0; i < eventIns.length; i++) {
            var node = eventIns[i];
            var path = (node.path || "").trim();
            if (!path) { continue; }
            if (trimSlashes(routePath(here.httpNodeRoot, path)) !== trimSlashes(decodeURI(callback.pathname))) { continue; }
            var listens = (node.method || "post").toUpperCase();
            if (listens === method) { return undefined; }
            return { nodeId: node.id, nodeName: node.name || "", path: path.charAt(0) === "/" ? path : "/" + path,
                eventInMethod: listens, subscriptionMethod: method };
        }
        return undefined;
    }

    function subscribeMethodWarning(callback, callbackType, method) {
        if ((callbackType || "str") !== "str") { return ""; }
        var eventIns = [];
        var publicBaseUrls = [];
        RED.nodes.eachNode(function (n) {
            if (n.type === "asset-event-in") { eventIns.push({ id: n.id, name: n.name, path: n.path, method: n.method }); }
        });
        RED.nodes.eachConfig(function (n) {
            if (n.type === "asset-server" && n.publicBaseUrl) { publicBaseUrls.push(n.publicBaseUrl); }
        });
        var here = { httpNodeRoot: RED.settings.httpNodeRoot, uiPort: window.location.port || (window.location.protocol === "https:" ? "443" : "80"), publicBaseUrls: publicBaseUrls };
        var m = callbackMethodMismatch({ callback: callback, method: method }, eventIns, here);
        if (!m) { return ""; }
        var node = m.nodeName ? "\"" + m.nodeName + "\" (" + m.path + ")" : m.path;
        return RED._(NS + "warnings.methodMismatch", { node: node, listens: m.eventInMethod, sends: m.subscriptionMethod });
    }

    function selectOnlyServer(node) {
        if (!node || node.server) { return; }
        var servers = [];
        RED.nodes.eachConfig(function (n) { if (n.type === "asset-server") { servers.push(n.id); } });
        if (servers.length === 1) { node.server = servers[0]; }
    }

    // ---- form rows shared by several dialogs (test/e2e/browser-editor-rows.test.js keeps them as they were)
    var UPLOAD_FIELDS = [["assetName", "fa-font", "text"], ["destination", "fa-folder", "text"], ["destinationFuid", "fa-folder-o", "number"],
        ["collectionId", "fa-th-large", "number"], ["wait", "fa-hourglass-half", "bool"], ["waitInMinutes", "fa-clock-o", "number"], ["expandZip", "fa-file-archive-o", "bool"]];
    function row(name, icon, label, control) {
        return '<div class="form-row"><label for="node-input-' + name + '"><i class="fa ' + icon + '"></i> <span data-i18n="' + label + '"></span></label> ' + control + '</div>';
    }
    function settingRow(ns, name, icon) {
        return row(name, icon, ns + ".label." + name, '<input type="text" id="node-input-' + name + '" style="width: 60px;" data-i18n="[placeholder]' + ns +
            ".placeholder." + name + '"> <span data-i18n="' + ns + ".tip." + name + '"></span>');
    }
    var ROWS = {
        server: function (ns) { return row("server", "fa-server", ns + ".label.server", '<input type="text" id="node-input-server">'); },
        name: function () { return row("name", "fa-tag", "node-red:common.label.name", '<input type="text" id="node-input-name" data-i18n="[placeholder]node-red:common.label.name">'); },
        retries: function (ns) { return settingRow(ns, "retries", "fa-repeat"); },
        maxInFlight: function (ns) { return settingRow(ns, "maxInFlight", "fa-bars"); },
        "upload-fields": function (ns) {
            return UPLOAD_FIELDS.map(function (f) {
                return row(f[0], f[1], ns + ".label." + f[0], '<input type="text" id="node-input-' + f[0] + '" style="width: 70%;" data-i18n="[placeholder]' + ns +
                    ".placeholder." + f[0] + '"><input type="hidden" id="node-input-' + f[0] + 'Type">');
            }).join("") + '<div class="form-tips" style="margin-bottom: 12px;" data-i18n="[html]' + ns + '.tip.override"></div>';
        }
    };
    function fillRows(type) {
        var template = $("script[data-template-name='" + type + "']");
        template.text(template.text().replace(/<div data-dam-row="([\w-]+)"><\/div>/g, function (all, name) { return ROWS[name] ? ROWS[name](type) : all; }));
    }
    function uploadFields() { UPLOAD_FIELDS.forEach(function (f) { typedField(f[0], f[2]); }); }

    window.DamEditor = {
        fillRows: fillRows,
        uploadFields: uploadFields,
        ADMIN_ROUTE_SEGMENTS: ADMIN_ROUTE_SEGMENTS,
        adminPathClash: adminPathClash,
        editorRoot: editorRoot,
        selectOnlyServer: selectOnlyServer,
        literalRules: LITERAL_RULES,
        literalField: literalField,
        current: current,
        callbackMethodMismatch: callbackMethodMismatch,
        subscribeMethodWarning: subscribeMethodWarning,
        fieldTypes: FIELD_TYPES,
        typedField: typedField,
        SUBSCRIPTION_ID: SUBSCRIPTION_ID,
        HEADER_NAME: HEADER_NAME,
        validateSubscriptionId: validateSubscriptionId,
        subscriptionIdValidator: subscriptionIdValidator,
        validateInFlight: validateInFlight,
        validateRetries: validateRetries,
        isBlankSetting: isBlankSetting,
        numberSetting: numberSetting,
        baseUrl: baseUrl,
        timeoutSetting: timeoutSetting,
        headerNameSetting: headerNameSetting,
        headerList: headerList,
        queryParamList: queryParamList,
        pathList: pathList,
        metadataList: metadataList,
        readList: readList,
        readPathList: readList,
        readHeaderList: readList,
        readQueryParamList: readList,
        readMetadataList: readList
    };
})();
