"""Issue 10, Java thread hand-off: a JDK 17 front — com.sun.net.httpserver.HttpServer with an 8-thread
executor — calls the back-end with java.net.http.HttpClient, whose socket I/O runs on the client's own
selector thread, never on the thread that called send(). The source is compiled with javac at test time.
Under 24 concurrent keep-alive connections and a unique path per request: 0 calls in another request's
transaction (the issue's requirement for Java), the share of transactions holding exactly their own call
printed, and the front's unattributed HTTP_CALL steps equal its missing calls (attribution.py)."""
import os
import subprocess
import unittest

from attribution import REQUESTS, check_front, drive, start_back
from txraytest import Collector, TxrayTestCase, agent_env, bare_env, free_port, wait_port, wait_transactions

JAVA = "/usr/bin/java"    # OpenJDK 17 (Debian package openjdk-17-jdk-headless)
JAVAC = "/usr/bin/javac"

FRONT_JAVA = """\
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

// GET /r/<id>: calls the back-end's GET /b/<id> with the shared HttpClient and answers "r <id>" and the
// back-end's answer. Usage: java -cp DIR Front PORT BACKEND_PORT
public class Front {
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    String backend = "http://127.0.0.1:" + args[1] + "/b/";
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 256);
    server.createContext("/r/", ex -> {
      String id = ex.getRequestURI().getPath().substring(3);
      int status;
      byte[] out;
      try {
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(backend + id)).GET().build(),
                                             HttpResponse.BodyHandlers.ofString());
        status = r.statusCode() == 200 ? 200 : 502;
        out = ("r " + id + "\\n" + r.body()).getBytes(StandardCharsets.UTF_8);
      } catch (Exception e) {
        status = 502;
        out = ("back-end failed: " + e + "\\n").getBytes(StandardCharsets.UTF_8);
      }
      ex.getResponseHeaders().set("Content-Type", "text/plain");
      ex.sendResponseHeaders(status, out.length);
      try (OutputStream os = ex.getResponseBody()) {
        os.write(out);
      }
    });
    server.setExecutor(Executors.newFixedThreadPool(8));
    server.start();
    System.out.println("Front listening on http port " + port);
  }
}
"""


class JdkAttribution(TxrayTestCase):
    def setUp(self):
        super().setUp()
        with open(os.path.join(self.tmp, "Front.java"), "w") as f:
            f.write(FRONT_JAVA)
        subprocess.run([JAVAC, "-d", self.tmp, os.path.join(self.tmp, "Front.java")], env=bare_env(),
                       check=True, timeout=180)

    def start_front(self, env, backend):
        port = free_port()
        p = self.spawn([JAVA, "-cp", self.tmp, "Front", str(port), str(backend)], env=env,
                       stdout=subprocess.DEVNULL)
        wait_port(port, timeout=60)
        return p, port

    def test_never_a_wrong_call(self):
        _, backend = start_back(self)
        with Collector(self.tmp) as col:
            front, port = self.start_front(agent_env(col.endpoint, app="jdk-front"), backend)
            answers = drive(port)
            self.assertEqual({i: a for i, a in answers.items() if a != f"r {i}\nb {i}"}, {})
            wait_transactions(col.db, REQUESTS)
            front.terminate()  # the JVM exits through exit(): the agent sends what it holds
            front.wait(timeout=30)
        # Java: never wrong; the exact share is printed, not required.
        check_front(self, col.db, "jdk-front", exact_share=0.0)


if __name__ == "__main__":
    unittest.main()
