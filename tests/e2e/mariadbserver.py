"""A throw-away MariaDB server for end-to-end tests (Debian's mariadb-server).

The system tables are created by `mariadbd --bootstrap` fed the same SQL files mariadb-install-db uses
(minus the help tables, GIS procedures and sys schema, which take most of its time and no test needs),
with root allowed to log in without a password (mariadb-install-db's
--auth-root-authentication-method=normal). The server then listens on a Unix socket in a fresh temporary
folder and on a free TCP port of 127.0.0.1 (so the agent's socket counters see its traffic), with InnoDB
made small and unsynced; stop() kills it (the pid this object started) and removes the folder.
MariaDB refuses to run as root unless told to: as root it runs with --user=root. The server never runs
under the agent: the tests preload the agent into the clients only.
MariaDbServer(ssl=True) serves TLS with a self-signed certificate (self.cert) and requires it on TCP
(require_secure_transport: a client that does not ask for TLS is refused); its own client uses --ssl.

    with MariaDbServer() as db:
        subprocess.run(["mariadb", *db.client_args(), "-e", "select 1"])
"""
import os
import shutil
import subprocess
import tempfile
import time

from tlscert import self_signed
from txraytest import free_port, wait_for

MARIADBD = "/usr/sbin/mariadbd"
CLIENT = "/usr/bin/mariadb"
SHARE = "/usr/share/mysql"
SYSTEM_SQL = ("mysql_system_tables.sql", "mysql_performance_tables.sql", "mysql_system_tables_data.sql")


def available():
    """True when the MariaDB server and client programs are installed."""
    return (os.access(MARIADBD, os.X_OK) and os.access(CLIENT, os.X_OK)
            and all(os.path.exists(os.path.join(SHARE, f)) for f in SYSTEM_SQL))


class MariaDbServer:
    def __init__(self, ssl=False):
        self.ssl = ssl
        self.cert = None
        self.dir = None
        self.port = None
        self.proc = None
        self.user = "root"
        self.database = "txray"

    def _server_env(self):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)  # the server is not what is traced
        env["LC_ALL"] = "C"
        return env

    def _common(self):
        opts = ["--no-defaults", f"--datadir={self.dir}/data", "--innodb-log-file-size=4M",
                "--innodb-buffer-pool-size=16M", "--innodb-flush-method=nosync", "--skip-name-resolve",
                "--max-allowed-packet=8M", "--log-warnings=0"]
        if os.geteuid() == 0:
            opts.append("--user=root")
        if self.ssl:
            cert, key = self_signed(self.dir)
            self.cert = cert
            opts += [f"--ssl-cert={cert}", f"--ssl-key={key}", "--require-secure-transport=ON"]
        return opts

    def _log(self):
        try:
            with open(os.path.join(self.dir, "log")) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    @property
    def socket(self):
        return os.path.join(self.dir, "sock")

    def start(self, timeout=60):
        if not available():
            raise RuntimeError("MariaDB is not installed (scripts/install-deps.sh installs mariadb-server)")
        self.dir = tempfile.mkdtemp(prefix="txray-mariadb-")
        os.mkdir(os.path.join(self.dir, "data"))
        sql = ["create database if not exists mysql;", "use mysql;", "SET @auth_root_socket=NULL;"]
        for f in SYSTEM_SQL:
            with open(os.path.join(SHARE, f)) as fh:
                sql.append(fh.read())
        sql.append(f"create database {self.database};")
        r = subprocess.run([MARIADBD, *self._common(), "--bootstrap", "--silent-startup"],
                           input="\n".join(sql), capture_output=True, text=True, env=self._server_env(),
                           timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"mariadbd --bootstrap failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        deadline = time.monotonic() + timeout
        for attempt in range(5):
            self.port = free_port()
            log = open(os.path.join(self.dir, "log"), "w")
            self.proc = subprocess.Popen(
                [MARIADBD, *self._common(), f"--socket={self.socket}", f"--port={self.port}",
                 "--bind-address=127.0.0.1", f"--pid-file={self.dir}/pid", "--skip-log-bin", "--max-connections=50"],
                stdout=log, stderr=subprocess.STDOUT, env=self._server_env())
            log.close()
            try:
                wait_for(lambda: self.proc.poll() is not None or self.client_ok(),
                         timeout=max(1.0, deadline - time.monotonic()), interval=0.1, what="MariaDB accepting queries")
            except Exception:
                self.stop()
                raise
            if self.proc.poll() is None:
                return self
            if "Address already in use" not in self._log() or attempt == 4:
                raise RuntimeError(f"mariadbd exited ({self.proc.returncode}):\n{self._log()}")
        return self

    def client_ok(self):
        r = subprocess.run([CLIENT, *self.client_args(), "-N", "-e", "select 1"], capture_output=True, text=True,
                           env=self._server_env())
        return r.returncode == 0 and r.stdout.strip() == "1"

    def sql(self, text):
        """Runs SQL with the mariadb client (not traced); returns its output."""
        r = subprocess.run([CLIENT, *self.client_args(), "-N", "-B", "-e", text], capture_output=True, text=True,
                           env=self._server_env(), timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"mariadb -e {text!r} failed:\n{r.stderr}")
        return r.stdout

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()  # the server this object started, by its pid
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- for clients ---
    def client_args(self):
        """mariadb client options reaching this server over TCP."""
        tls = ["--ssl"] if self.ssl else []
        return ["--no-defaults", "-h", "127.0.0.1", "-P", str(self.port), "-u", self.user, *tls, self.database]
