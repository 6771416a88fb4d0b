/*
 * DamConnectionTest: the "Test connection" button of the asset-server dialog.
 *
 * Served from this package's resources/ folder; nodes/asset-server.html loads it and calls
 *   DamConnectionTest.attach(node)
 * in oneditprepare. The click posts the values typed in the dialog (base URL, cookie, timeout,
 * TLS choice, proxy choice, automatic login: its settings, user name and password) to the admin route
 * dam-assets/connection-test (runtime: src/plugin/dam-sidebar.ts), so it works before a deploy.
 * A cookie or password field still showing the saved placeholder sends the placeholder: the
 * runtime then uses the deployed node's value, for the deployed node's servers only. With
 * automatic login on, the runtime logs in first. The answer says what to fix.
 * Strings come from the DAM sidebar plugin's catalogue (keys `dam-sidebar.test.*`, `dam-sidebar.result.*`).
 */
(function () {
    "use strict";
    if (window.DamConnectionTest) { return; }
    var NS = "@dam-assets/node-red/dam-sidebar:dam-sidebar.";
    function t(key, params) { return RED._(NS + key, params); }

    /** The automatic-login properties of the dialog (src/nodes/asset-server/session.ts LoginConfig). */
    var LOGIN_SETTINGS = ["loginPreset", "loginUrl", "loginSessionUrl", "loginMethod", "loginFieldsIn", "loginFields", "sessionFrom", "sessionName", "cookieName"];

    /** A password-type credential as typed; one typed earlier in this session but not deployed yet lives in node.credentials. */
    function secret(node, name) {
        var value = $("#node-config-input-" + name).val();
        var earlier = node.credentials && node.credentials[name];
        return value === "__PWRD__" && typeof earlier === "string" && earlier !== "__PWRD__" ? earlier : value;
    }

    function typedValues(node) {
        var useTls = $("#node-config-input-usetls").is(":checked");
        var tls = useTls ? $("#node-config-input-tls").val() : "";
        var values = {
            id: node.id,
            baseUrl: $("#node-config-input-baseUrl").val(),
            cookie: secret(node, "cookie"),
            timeout: $("#node-config-input-timeout").val(),
            rejectUnauthorized: $("#node-config-input-rejectUnauthorized").is(":checked"),
            tls: tls && tls !== "_ADD_" ? tls : "",
            loginEnabled: $("#node-config-input-loginEnabled").is(":checked"),
            proxyMode: $("#node-config-input-proxyMode").val() || "env",
            proxy: $("#node-config-input-proxy").val() || ""
        };
        if (values.loginEnabled) {
            LOGIN_SETTINGS.forEach(function (key) { values[key] = $("#node-config-input-" + key).val(); });
            values.username = $("#node-config-input-username").val();
            values.password = secret(node, "password");
        }
        return values;
    }

    function attach(node) {
        var button = $("#node-config-dam-test");
        var result = $("#node-config-dam-test-result");
        if (!RED.user.hasPermission("asset-server.write")) { button.prop("disabled", true); }
        button.on("click", function (e) {
            e.preventDefault();
            button.prop("disabled", true);
            result.attr("data-result", "").empty().text(t("test.testing"));
            $.ajax({
                method: "POST", url: "dam-assets/connection-test", dataType: "json", contentType: "application/json",
                data: JSON.stringify(typedValues(node))
            }).done(function (r) {
                var ok = r.result === "ok";
                result.attr("data-result", r.result).empty()
                    .append($('<span class="dam-badge">').css({ background: ok ? "#5a8" : "#c44", color: "#fff", padding: "0 6px", borderRadius: "3px", marginRight: "4px" })
                        .text(t("result." + r.result)), " "); // a space: badge and message are two words in the text too
                if (r.part && !ok) { result.append($("<b>").text(t("test.part." + r.part, { defaultValue: r.part }) + ": ")); }
                result.append($("<span>").text(r.message));
                if (ok) { result.append($("<div>").addClass("form-tips").text(t("test.addNotChecked"))); }
            }).fail(function (xhr) {
                result.attr("data-result", "error").text(t("failed", { message: (xhr.responseJSON && xhr.responseJSON.error) || xhr.status }));
            }).always(function () { button.prop("disabled", false); });
        });
    }

    window.DamConnectionTest = { attach: attach };
})();
