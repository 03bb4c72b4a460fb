// Every format renders the same computed numbers; data is escaped (HTML, Markdown) and quoted (CSV).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "report.h"
#include "store_fixture.h"

using namespace txray::report;
using namespace txray::report::testing;

namespace {

const std::string kEvilName = "GET /<script>alert(1)</script>?a=\"x\",b|c";
const std::string kEvilSql = "SELECT '<script>' , \"q\" FROM t WHERE a = ?";

class RenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s.agent("shop");
    for (int k = 1; k <= 6; ++k) {
      StoreBuilder::Tx t;
      t.name = k % 2 ? kEvilName : "GET /plain";
      t.start_ms = k * 100;
      t.elapsed_ms = k * 7;
      t.cpu_ms = 1;
      t.sql_ms = 6;
      const int64_t id = s.tx(t);
      for (int i = 0; i < 6; ++i)
        s.step(id, {.no = i, .kind = "SQL", .start_ms = i, .gap_ms = 1, .elapsed_ms = 1, .text = kEvilSql,
                    .fingerprint = 99, .rows = 2});
    }
    db = s.done();
  }
  std::string render(const std::string& format, const std::string& table = "") {
    Options o;
    o.db = db;
    o.format = format;
    o.table = table;
    std::ostringstream out;
    EXPECT_EQ(write_report(o, out), "");
    return out.str();
  }
  StoreBuilder s;
  std::string db;
};

TEST_F(RenderTest, JsonHasEveryKeyAndTheNumbers) {
  auto j = nlohmann::json::parse(render("json"));
  for (const char* k : {"summary", "slowest", "names", "sql", "calls", "repeated", "histogram"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* k : {"transactions", "errors", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms"})
    EXPECT_TRUE(j["summary"].contains(k)) << k;
  EXPECT_EQ(j["summary"]["transactions"], 6);
  EXPECT_DOUBLE_EQ(j["summary"]["p50_ms"].get<double>(), 21.0);  // 7,14,21,28,35,42: rank 3
  EXPECT_DOUBLE_EQ(j["summary"]["max_ms"].get<double>(), 42.0);
  EXPECT_EQ(j["sql"][0]["calls"], 36);
  EXPECT_EQ(j["sql"][0]["rows"], 72);
  EXPECT_EQ(j["sql"][0]["example"], kEvilSql);
  EXPECT_EQ(j["repeated"][0]["transactions"], 6);
  EXPECT_EQ(j["names"][0]["name"], "GET /plain");  // 14+28+42 = 84 ms
  EXPECT_EQ(j["names"][1]["name"], kEvilName);     // 7+21+35 = 63 ms
}

TEST_F(RenderTest, HtmlIsSelfContainedAndEscaped) {
  std::string h = render("html");
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(h.find("<script"), std::string::npos);  // no script at all, least of all the data's
  EXPECT_NE(h.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(h.find("SELECT &#39;&lt;script&gt;&#39;"), std::string::npos);
  EXPECT_EQ(h.find("src=\"http"), std::string::npos);   // nothing loaded from elsewhere
  EXPECT_EQ(h.find("href=\"http"), std::string::npos);
  EXPECT_NE(h.find("<svg"), std::string::npos);
  EXPECT_NE(h.find("<style>"), std::string::npos);
}

TEST_F(RenderTest, MarkdownEscapesPipesAndTags) {
  std::string m = render("md");
  for (const char* sec : {"## Summary", "## Slowest transactions", "## Transaction names", "## SQL by fingerprint",
                          "## Outbound calls", "## Repeated calls", "## Response-time histogram"})
    EXPECT_NE(m.find(sec), std::string::npos) << sec;
  EXPECT_EQ(m.find("<script>"), std::string::npos);
  EXPECT_NE(m.find("GET /&lt;script&gt;alert(1)&lt;/script&gt;?a=\"x\",b\\|c"), std::string::npos);
}

TEST_F(RenderTest, CsvQuotesFieldsAndWritesEveryTable) {
  std::string names = render("csv", "names");
  EXPECT_EQ(names.rfind("app,name,count,total_ms,share,avg_ms,p95_ms,max_ms,errors\n", 0), 0u);
  EXPECT_NE(names.find("shop,\"GET /<script>alert(1)</script>?a=\"\"x\"\",b|c\",3,63.000,"), std::string::npos)
      << names;
  std::string sql = render("csv", "sql");
  EXPECT_NE(sql.find("\"SELECT '<script>' , \"\"q\"\" FROM t WHERE a = ?\""), std::string::npos) << sql;

  Options o;
  o.db = db;
  o.format = "csv";
  const auto dir = std::filesystem::temp_directory_path() / ("txray-report-csv-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  ASSERT_EQ(write_report_dir(o, dir.string()), "");
  for (const auto& t : table_names()) {
    std::ifstream f(dir / (t + ".csv"));
    std::string header;
    EXPECT_TRUE(std::getline(f, header)) << t;
    EXPECT_FALSE(header.empty()) << t;
  }
  std::filesystem::remove_all(dir);

  std::ostringstream out;
  EXPECT_NE(write_report(o, out), "");  // csv without a table cannot go to one stream
}

TEST_F(RenderTest, EveryFormatRendersAnEmptySelection) {
  for (const char* f : {"md", "html", "json"}) {
    Options o;
    o.db = db;
    o.format = f;
    o.name = "no such name";
    std::ostringstream out;
    EXPECT_EQ(write_report(o, out), "") << f;
    EXPECT_FALSE(out.str().empty()) << f;
  }
}

// The summary's unattributed steps, in every format.
TEST(RenderUnattributed, EveryFormatSaysHowManyAndWhatTheyAre) {
  StoreBuilder s;
  s.agent("front");
  StoreBuilder::Tx t;
  t.app = "front";
  t.elapsed_ms = 10;
  s.tx(t);
  StoreBuilder::Tx c = t;
  c.name = "unattributed steps";
  c.kind = "unattributed";
  c.elapsed_ms = 1000;
  const int64_t id = s.tx(c);
  for (int i = 0; i < 12; ++i)
    s.step(id, {.no = i, .kind = i < 10 ? "HTTP_CALL" : "SOCKET", .start_ms = i, .text = "GET http://back/b"});
  const std::string db = s.done();
  auto render = [&](const std::string& format, const std::string& table = "") {
    Options o;
    o.db = db;
    o.format = format;
    o.table = table;
    std::ostringstream out;
    EXPECT_EQ(write_report(o, out), "");
    return out.str();
  };
  auto j = nlohmann::json::parse(render("json"));
  EXPECT_EQ(j["summary"]["transactions"], 1);
  EXPECT_EQ(j["summary"]["unattributed_steps"], 12);
  EXPECT_EQ(j["summary"]["unattributed_by_kind"], (nlohmann::json{{"HTTP_CALL", 10}, {"SOCKET", 2}}));
  const std::string md = render("md");
  EXPECT_NE(md.find("**Unattributed steps: 12** (HTTP_CALL 10, SOCKET 2): steps"), std::string::npos) << md;
  EXPECT_NE(md.find("could not attribute to any request"), std::string::npos);
  EXPECT_NE(md.find("docs/agent.md"), std::string::npos);
  const std::string html = render("html");
  EXPECT_NE(html.find("<b>Unattributed steps: 12</b> (HTTP_CALL 10, SOCKET 2)"), std::string::npos);
  EXPECT_NE(html.find("<code>txray show --unattributed</code>"), std::string::npos);
  EXPECT_NE(html.find("<b>12</b><span>unattributed steps</span>"), std::string::npos);
  const std::string csv = render("csv", "summary");
  EXPECT_NE(csv.find("unattributed_steps,12\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("unattributed_by_kind,HTTP_CALL:10 SOCKET:2\n"), std::string::npos) << csv;
}

// The agent's own cost per application, in every format; transactions without a figure count for nobody.
TEST(RenderAgentCost, EveryFormatGivesThePerApplicationMeanAndShare) {
  StoreBuilder s;
  s.agent("shop");
  StoreBuilder::Tx t;
  t.app = "shop";
  t.elapsed_ms = 2;
  const int64_t a = s.tx(t);
  t.start_ms = 10;
  t.elapsed_ms = 1;
  const int64_t b = s.tx(t);
  t.start_ms = 20;
  s.tx(t);  // no figure
  s.exec("INSERT INTO agent_cost(tx_id, cost_ns, agent_thread_ns) VALUES (" + std::to_string(a) + ", 2100, 300), (" +
         std::to_string(b) + ", 3900, 300)");
  const std::string db = s.done();
  auto render = [&](const std::string& format, const std::string& table = "") {
    Options o;
    o.db = db;
    o.format = format;
    o.table = table;
    std::ostringstream out;
    EXPECT_EQ(write_report(o, out), "");
    return out.str();
  };
  auto j = nlohmann::json::parse(render("json"));
  ASSERT_EQ(j["summary"]["agent_cost"].size(), 1u) << j["summary"].dump();
  EXPECT_EQ(j["summary"]["agent_cost"][0]["app"], "shop");
  EXPECT_EQ(j["summary"]["agent_cost"][0]["transactions"], 2);
  EXPECT_DOUBLE_EQ(j["summary"]["agent_cost"][0]["mean_ns"].get<double>(), 3000.0);
  EXPECT_DOUBLE_EQ(j["summary"]["agent_cost"][0]["share"].get<double>(), 6000.0 / 3e6);
  const std::string md = render("md");
  EXPECT_NE(md.find("| shop | 2 | 3.0 µs | 0.2% |"), std::string::npos) << md;
  const std::string html = render("html");
  EXPECT_NE(html.find("shop 3.0 µs (0.2%) over 2 transactions"), std::string::npos) << html;
  const std::string csv = render("csv", "summary");
  EXPECT_NE(csv.find("agent_cost_ns_per_tx,shop:3000\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("agent_cost_share,shop:0.002000\n"), std::string::npos) << csv;
}

// A store from before the table: no figure, no error.
TEST(RenderAgentCost, AStoreWithoutTheTableHasNone) {
  StoreBuilder s;
  s.agent("shop");
  StoreBuilder::Tx t;
  s.tx(t);
  s.exec("DROP TABLE agent_cost");
  const std::string db = s.done();
  Options o;
  o.db = db;
  o.format = "json";
  std::ostringstream out;
  EXPECT_EQ(write_report(o, out), "");
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["summary"]["agent_cost"].size(), 0u);
}

}  // namespace

// The responsible step's stack: a person reads the frames' short form (one line per table cell), JSON keeps
// the full demangled names as the store has them.
TEST(RenderStack, MarkdownAndHtmlShortJsonFull) {
  const std::string str = "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >";
  const std::string full = "txray::samples::HttpReader::read_body(std::map<" + str + ", " + str + ", std::less<" +
                           str + " >, std::allocator<std::pair<" + str + " const, " + str + " > > > const&)";
  StoreBuilder s;
  s.agent("relay");
  StoreBuilder::Tx t;
  t.app = "relay";
  t.elapsed_ms = 900;
  t.sql_ms = 800;
  const int64_t id = s.tx(t);
  s.step(id, {.no = 0, .kind = "SQL", .start_ms = 1, .gap_ms = 1, .elapsed_ms = 800, .text = "SELECT 1"});
  s.exec("INSERT INTO step_frames(tx_id, step_no, depth, function, module, offset) VALUES (" + std::to_string(id) +
         ", 0, 0, " + StoreBuilder::q(full) + ", 'txray-relay', 6699)");
  const std::string db = s.done();
  auto render = [&](const std::string& format) {
    Options o;
    o.db = db;
    o.format = format;
    std::ostringstream out;
    EXPECT_EQ(write_report(o, out), "");
    return out.str();
  };
  const std::string md = render("md");
  EXPECT_NE(md.find(" \xc2\xb7 at txray::samples::HttpReader::read_body(\xe2\x80\xa6) (txray-relay+0x1a2b) |"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("basic_string"), std::string::npos) << md;
  const std::string html = render("html");
  EXPECT_NE(html.find(">txray::samples::HttpReader::read_body(\xe2\x80\xa6) (txray-relay+0x1a2b)</span>"),
            std::string::npos)
      << html;
  const auto j = nlohmann::json::parse(render("json"));
  ASSERT_EQ(j["slowest"].size(), 1u);
  ASSERT_EQ(j["slowest"][0]["step_stack"].size(), 1u);
  EXPECT_EQ(j["slowest"][0]["step_stack"][0], full + " (txray-relay+0x1a2b)");
}
