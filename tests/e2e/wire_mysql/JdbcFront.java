// MariaDB Connector/J in a JDK HttpServer with an 8-thread pool: GET /q/<id> runs a PreparedStatement
// (client-side prepare: a text COM_QUERY), GET /x/<id> the same with useServerPrepStmts (COM_STMT_PREPARE
// and EXECUTE, a binary bind), GET /bad/<id> a missing table. A connection per worker thread.
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.*;
import java.util.concurrent.Executors;

public class JdbcFront {
  static String url;
  static final ThreadLocal<Connection> text = new ThreadLocal<>(), server = new ThreadLocal<>();

  static Connection conn(ThreadLocal<Connection> t, String extra) throws SQLException {
    if (t.get() == null) t.set(DriverManager.getConnection(url + extra));
    return t.get();
  }

  public static void main(String[] a) throws Exception {
    url = "jdbc:mariadb://127.0.0.1:" + a[1] + "/txray?user=root";
    HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(a[0])), 64);
    s.setExecutor(Executors.newFixedThreadPool(8));
    s.createContext("/", ex -> {
      String[] p = ex.getRequestURI().getPath().split("/");
      String kind = p[1], rid = p[2], body;
      try {
        Connection c = kind.equals("x") ? conn(server, "&useServerPrepStmts=true") : conn(text, "");
        String table = kind.equals("bad") ? "missing_table" : "people";
        try (PreparedStatement st = c.prepareStatement("SELECT name FROM " + table + " WHERE id = ?")) {
          st.setInt(1, Integer.parseInt(rid));
          try (ResultSet r = st.executeQuery()) {
            body = rid + " " + (r.next() ? r.getString(1) : "none");
          }
        }
      } catch (SQLException e) {
        body = rid + " error " + e.getErrorCode();
      }
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, b.length);
      ex.getResponseBody().write(b);
      ex.close();
    });
    s.start();
  }
}
