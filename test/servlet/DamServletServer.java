// A stand-in of the asset server as a real servlet application: Debian's embedded Tomcat 10
// with its default settings, context path /review. The servlets answer with what the CONTAINER
// parsed (getParameter, getParts, sessions), so a test sees a request the way the real server
// reads it. Run without a build tool:
//   java -cp "$(ls /usr/share/java/tomcat10-*.jar | tr '\n' :)" DamServletServer.java [port [folder]]
// Prints "ready <port>" on stdout once it accepts connections (port 0 or none: a free port).
// Tomcat's work files and the uploaded parts go under folder (default: a new temporary folder).
// It exits when its stdin closes (or on SIGTERM).
import jakarta.servlet.MultipartConfigElement;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;
import jakarta.servlet.http.Part;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import org.apache.catalina.Context;
import org.apache.catalina.Wrapper;
import org.apache.catalina.startup.Tomcat;

public class DamServletServer {
    /** The revision every answer reports: above 2^53, so a double would change it. */
    static final String BIG_RRN = "9007199254740993";
    static final String PASSWORD = "servlet-secret";

    public static void main(String[] args) throws Exception {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        File base = args.length > 1 ? new File(args[1]) : Files.createTempDirectory("dam-tomcat-").toFile();
        File docBase = new File(base, "webapp");
        File uploads = new File(base, "uploads");
        docBase.mkdirs();
        uploads.mkdirs();

        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(base.getAbsolutePath());
        tomcat.setHostname("127.0.0.1");
        tomcat.setPort(port);
        tomcat.getConnector().setProperty("address", "127.0.0.1");
        Context context = tomcat.addContext("/review", docBase.getAbsolutePath());

        Tomcat.addServlet(context, "login", new LoginServlet());
        context.addServletMappingDecoded("/login", "login");
        Tomcat.addServlet(context, "logout", new LogoutServlet());
        context.addServletMappingDecoded("/logout", "logout");
        Tomcat.addServlet(context, "subscribe", new SubscribeServlet());
        context.addServletMappingDecoded("/api/events/assets/subscribe/*", "subscribe");
        Wrapper upload = Tomcat.addServlet(context, "upload", new UploadServlet());
        // Parts above 1 MiB go to disk (the container's own temporary files), no size limit.
        upload.setMultipartConfigElement(new MultipartConfigElement(uploads.getAbsolutePath(), -1, -1, 1024 * 1024));
        context.addServletMappingDecoded("/api/asset/upload", "upload");
        Tomcat.addServlet(context, "download", new DownloadServlet());
        context.addServletMappingDecoded("/api/asset/download", "download");
        Tomcat.addServlet(context, "export", new ExportServlet());
        context.addServletMappingDecoded("/api/asset/export/metadata", "export");

        tomcat.start();
        // Stops when stdin closes, so that it never outlives the test process that started it.
        Thread watchdog = new Thread(() -> {
            try { while (System.in.read() >= 0) { } } catch (IOException e) { }
            System.exit(0);
        });
        watchdog.setDaemon(true);
        watchdog.start();
        System.out.println("ready " + tomcat.getConnector().getLocalPort());
        System.out.flush();
        tomcat.getServer().await();
    }

    // ---- answers --------------------------------------------------------------------------

    static String quote(String text) {
        if (text == null) return "null";
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
            }
        }
        return out.append('"').toString();
    }

    /** Every parameter the container parsed, each with its values in the order received. */
    static String parameters(HttpServletRequest request) {
        StringBuilder out = new StringBuilder("{");
        for (String name : Collections.list(request.getParameterNames())) {
            if (out.length() > 1) out.append(',');
            out.append(quote(name)).append(":[");
            String[] values = request.getParameterValues(name);
            for (int i = 0; i < values.length; i++) out.append(i > 0 ? "," : "").append(quote(values[i]));
            out.append(']');
        }
        return out.append('}').toString();
    }

    static void json(HttpServletResponse response, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        response.setStatus(status);
        response.setContentType("application/json;charset=UTF-8");
        response.setContentLength(bytes.length);
        response.getOutputStream().write(bytes);
    }

    /** The container's session, if the request carries a live one (spec 5: else HTTP 401). */
    static boolean authenticated(HttpServletRequest request, HttpServletResponse response) throws IOException {
        HttpSession session = request.getSession(false);
        if (session != null && session.getAttribute("user") != null) return true;
        json(response, 401, "{\"success\":false,\"error\":\"authentication failed\"}");
        return false;
    }

    static String requestFacts(HttpServletRequest request) {
        return "\"contentType\":" + quote(request.getContentType())
            + ",\"characterEncoding\":" + quote(request.getCharacterEncoding());
    }

    // ---- servlets -------------------------------------------------------------------------

    static class LoginServlet extends HttpServlet {
        @Override
        protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
            String user = request.getParameter("user");
            if (user == null || !PASSWORD.equals(request.getParameter("password"))) {
                json(response, 401, "{\"success\":false,\"error\":\"wrong user or password\"}");
                return;
            }
            request.getSession(true).setAttribute("user", user);
            json(response, 200, "{\"success\":true}");
        }
    }

    static class LogoutServlet extends HttpServlet {
        @Override
        protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
            HttpSession session = request.getSession(false);
            if (session != null) session.invalidate();
            json(response, 200, "{\"success\":true,\"invalidated\":" + (session != null) + "}");
        }
    }

    static class SubscribeServlet extends HttpServlet {
        static String id(HttpServletRequest request) {
            String path = request.getPathInfo();
            return path == null ? "" : path.substring(1);
        }

        @Override
        protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
            if (!authenticated(request, response)) return;
            json(response, 200, "{\"success\":true,\"id\":" + quote(id(request)) + ",\"received\":" + parameters(request)
                + "," + requestFacts(request) + "}");
        }

        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
            if (!authenticated(request, response)) return;
            json(response, 200, "{\"success\":true,\"id\":" + quote(id(request)) + "}");
        }

        @Override
        protected void doDelete(HttpServletRequest request, HttpServletResponse response) throws IOException {
            if (!authenticated(request, response)) return;
            json(response, 200, "{\"success\":true,\"id\":" + quote(id(request)) + "}");
        }
    }

    static class UploadServlet extends HttpServlet {
        @Override
        protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
            if (!authenticated(request, response)) return;
            StringBuilder files = new StringBuilder("[");
            long total = 0;
            try {
                for (Part part : request.getParts()) {
                    if (part.getSubmittedFileName() == null) continue;
                    MessageDigest sha256 = MessageDigest.getInstance("SHA-256");
                    long length = 0;
                    byte[] buffer = new byte[64 * 1024];
                    try (InputStream in = part.getInputStream()) {
                        for (int n; (n = in.read(buffer)) > 0; ) { sha256.update(buffer, 0, n); length += n; }
                    }
                    total += length;
                    if (files.length() > 1) files.append(',');
                    files.append("{\"field\":").append(quote(part.getName()))
                        .append(",\"filename\":").append(quote(part.getSubmittedFileName()))
                        .append(",\"contentType\":").append(quote(part.getContentType()))
                        .append(",\"length\":").append(length)
                        .append(",\"sha256\":").append(quote(HexFormat.of().formatHex(sha256.digest()))).append('}');
                    part.delete();
                }
            } catch (Exception e) {
                json(response, 200, "{\"success\":false,\"error\":" + quote("upload failed: " + e) + "}");
                return;
            }
            files.append(']');
            json(response, 200, "{\"data\":{\"bid\":1,\"fuids\":[4711],\"rrn\":" + BIG_RRN + "},\"success\":true,\"length\":" + total
                + ",\"received\":" + parameters(request) + ",\"files\":" + files + "," + requestFacts(request) + "}");
        }
    }

    static class DownloadServlet extends HttpServlet {
        /** A UTF-8 file name: only `filename*` (RFC 6266, RFC 8187) carries it exactly. */
        static final String NAME = "Überweisungen São Paulo.txt";

        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
            if (!authenticated(request, response)) return;
            byte[] body = ("fuid=" + request.getParameter("fuid") + " rrn=" + request.getParameter("rrn") + " Zürich\n")
                .getBytes(StandardCharsets.UTF_8);
            String encoded = URLEncoder.encode(NAME, StandardCharsets.UTF_8).replace("+", "%20");
            response.setContentType("text/plain;charset=UTF-8");
            response.setHeader("Content-Disposition", "attachment; filename=\"Ueberweisungen Sao Paulo.txt\"; filename*=UTF-8''" + encoded);
            response.setContentLength(body.length);
            try (OutputStream out = response.getOutputStream()) { out.write(body); }
        }
    }

    static class ExportServlet extends HttpServlet {
        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
            if (!authenticated(request, response)) return;
            String rrn = request.getParameter("rrn");
            // The rrn goes back as a JSON number, digit for digit as the container parsed it.
            String rrnJson = rrn != null && rrn.matches("-?\\d+") ? rrn : quote(rrn);
            List<String> names = Collections.list(request.getParameterNames());
            StringBuilder listed = new StringBuilder("[");
            for (String name : names) listed.append(listed.length() > 1 ? "," : "").append(quote(name));
            json(response, 200, "{\"success\":true,\"rrn\":" + rrnJson + ",\"fuid\":" + quote(request.getParameter("fuid"))
                + ",\"type\":" + quote(request.getParameter("type")) + ",\"parameterNames\":" + listed + "],\"revision\":" + BIG_RRN + "}");
        }
    }
}
