// txray-viewer [DB]
// txray-viewer --screenshot OUT.png [--select-slowest | --compare] [--log-scale] [--size WxH] DB
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include <cstdio>
#include <optional>

#include "store.h"

#include "list_panel.h"
#include "scatter_view.h"
#include "main_window.h"

using txray::viewer::MainWindow;

namespace {

// Opens DB, waits for all rows, optionally boxes the slowest 1 % of the view and opens the slowest
// transaction's profile, then saves the window to OUT and quits. Exit code 1 when the store cannot be read.
// compare: boxes the slowest 1 % of the view (the current group) and the middle half (p25-p75, the
// baseline) and
// shows their comparison with the first member's two examples.
void screenshot(MainWindow& w, const QString& db, const QString& out, bool slowest, bool compare) {
  auto save = [&w, out] {
    // Let the last layout/paint settle before grabbing.
    QTimer::singleShot(50, &w, [&w, out] {
      const bool ok = w.grab().save(out);
      if (!ok) std::fprintf(stderr, "txray-viewer: cannot write %s\n", qPrintable(out));
      QApplication::exit(ok ? 0 : 1);
    });
  };
  QObject::connect(&w, &MainWindow::storeFailed, &w, [](const QString& m) {
    std::fprintf(stderr, "txray-viewer: %s\n", qPrintable(m));
    QApplication::exit(1);
  });
  QObject::connect(&w, &MainWindow::loadFinished, &w, [&w, slowest, compare, save] {
    // A picture of the data, not of the live window: a short demo run would sit at the right edge of
    // a 15-minute window.
    w.scatter()->fitAll();
    if (compare && w.points().size() > 0) {
      QObject::connect(&w, &MainWindow::examplesShown, &w, [save] { save(); });
      w.scatter()->ensureUpToDate();
      const auto& axis = w.scatter()->timeAxis();
      const int64_t p99 = w.points().quantile_elapsed(axis.t0(), axis.t1(), 0.99, 1000000);
      const int64_t p25 = w.points().quantile_elapsed(axis.t0(), axis.t1(), 0.25, 1000000);
      const int64_t p75 = w.points().quantile_elapsed(axis.t0(), axis.t1(), 0.75, 1000000);
      w.selectBox(txray::viewer::Box{axis.t0(), axis.t1(), p99, INT64_MAX});
      w.compareWith(txray::viewer::Box{axis.t0(), axis.t1(), p25, p75});
      return;
    }
    if (!slowest || w.points().size() == 0) return save();
    QObject::connect(&w, &MainWindow::listFilled, &w, [&w, save](int rows) {
      if (rows == 0) return save();
      w.list()->selectSlowest();
    });
    QObject::connect(&w, &MainWindow::profileShown, &w, [save](qint64) { save(); });
    // Box the slow dots (the slowest 1 % of the view, up to the top) as a user would, so that the
    // list holds the slow transactions and the slowest one's profile opens.
    w.scatter()->ensureUpToDate();
    const auto& axis = w.scatter()->timeAxis();
    const int64_t p99 = w.points().quantile_elapsed(axis.t0(), axis.t1(), 0.99, 1000000);
    w.selectBox(txray::viewer::Box{axis.t0(), axis.t1(), p99, INT64_MAX});
  });
  w.openStore(db);
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("txray");
  QApplication::setApplicationName("txray-viewer");
  QApplication::setApplicationVersion("0.1");

  QCommandLineParser cli;
  cli.setApplicationDescription("The X-View of a txray store: response-time scatter, transaction list, profile.");
  cli.addHelpOption();
  cli.addVersionOption();
  QCommandLineOption shot("screenshot", "Render the main window on DB to OUT.png and exit.", "OUT.png");
  QCommandLineOption slowest("select-slowest", "With --screenshot: box the whole view and open the slowest profile.");
  QCommandLineOption cmp("compare", "With --screenshot: compare the slowest 1 % of the view with its middle half (p25-p75).");
  QCommandLineOption log("log-scale", "Start with the response-time axis on a log scale.");
  QCommandLineOption size("size", "Window size for --screenshot (default 1600x1000).", "WxH", "1600x1000");
  QCommandLineOption txid("txid", "Open the profile of the transaction with this txid (hex, as txray show and the "
                                  "metrics' exemplars give it).", "HEX");
  cli.addOptions({shot, slowest, cmp, log, size, txid});
  cli.addPositionalArgument("DB", "txray store (SQLite file written by `txray collect`).");
  cli.process(app);
  const QStringList args = cli.positionalArguments();
  if (args.size() > 1) {
    std::fprintf(stderr, "txray-viewer: one store at a time (got %lld)\n", static_cast<long long>(args.size()));
    return 2;
  }

  // --txid: from a latency alert's exemplar to the profile in one step. Looked up before the window opens,
  // so a wrong id is said at once (and the store still opens).
  std::optional<qint64> open_id;
  if (cli.isSet(txid)) {
    bool ok = false;
    const uint64_t want = cli.value(txid).toULongLong(&ok, 16);
    if (!ok || args.isEmpty()) {
      std::fprintf(stderr, "txray-viewer: --txid wants a hex transaction id and a DB\n");
      return 2;
    }
    try {
      txray::viewer::Store s(args[0].toStdString());
      if (auto id = s.find_txid(want)) open_id = *id;
      else std::fprintf(stderr, "txray-viewer: no transaction with txid %s in %s\n", qPrintable(cli.value(txid)),
                        qPrintable(args[0]));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "txray-viewer: %s\n", e.what());
      return 2;
    }
  }

  MainWindow w(!cli.isSet(shot));
  if (cli.isSet(log)) w.scatter()->setLogScale(true);
  if (cli.isSet(shot)) {
    if (args.isEmpty()) {
      std::fprintf(stderr, "txray-viewer: --screenshot needs a DB\n");
      return 2;
    }
    const QStringList wh = cli.value(size).split('x');
    if (wh.size() != 2 || wh[0].toInt() < 200 || wh[1].toInt() < 200) {
      std::fprintf(stderr, "txray-viewer: --size wants WxH, e.g. 1600x1000\n");
      return 2;
    }
    w.resize(wh[0].toInt(), wh[1].toInt());
    w.setAttribute(Qt::WA_DontShowOnScreen);
    w.show();
    screenshot(w, args[0], cli.value(shot), cli.isSet(slowest), cli.isSet(cmp));
    return app.exec();
  }
  w.show();
  if (!args.isEmpty()) w.openStore(args[0]);
  if (open_id) w.openTransaction(*open_id);
  return app.exec();
}
