// The standard catalog: a small shop, its payment service, a reporting portal whose report service sends
// large compressed responses (the reference case), and a catalog/search service.
#include "gen_model.h"

namespace txray::gen {

namespace {
int add_text(Catalog& c, std::string text) {
  c.texts.push_back(std::move(text));
  return static_cast<int>(c.texts.size()) - 1;
}
int add_sql(Catalog& c, std::string text, int64_t median_us, int max_rows, bool write) {
  c.sql.push_back({add_text(c, std::move(text)), median_us, max_rows, write});
  return static_cast<int>(c.sql.size()) - 1;
}
}  // namespace

Catalog Catalog::standard() {
  Catalog c;
  c.agents = {
      {"shop", "web-1", 0x5a11000000000001, 4101},     {"shop", "web-2", 0x5a11000000000002, 4102},
      {"payments", "pay-1", 0x5a11000000000003, 5201}, {"portal", "web-3", 0x5a11000000000004, 6301},
      {"reports", "rep-1", 0x5a11000000000005, 7401},  {"catalog", "cat-1", 0x5a11000000000006, 8501},
  };
  int order_by_id = add_sql(c, "SELECT * FROM orders WHERE id = ?", 900, 1, false);
  int order_lines = add_sql(c, "SELECT * FROM order_lines WHERE order_id = ? ORDER BY line_no", 1500, 20, false);
  int customer = add_sql(c, "SELECT id, name, email FROM customers WHERE id = ?", 700, 1, false);
  int products = add_sql(c, "SELECT id, title, price FROM products WHERE category = ? LIMIT ?", 4000, 50, false);
  int stock = add_sql(c, "SELECT qty FROM stock WHERE product_id IN (?)", 1200, 10, false);
  int cart = add_sql(c, "SELECT product_id, qty FROM cart_items WHERE session_id = ?", 600, 8, false);
  int insert_order = add_sql(c, "INSERT INTO orders(customer_id, total, created) VALUES (?, ?, ?)", 2500, 0, true);
  int insert_line = add_sql(c, "INSERT INTO order_lines(order_id, product_id, qty, price) VALUES (?, ?, ?, ?)", 1800, 0, true);
  int update_stock = add_sql(c, "UPDATE stock SET qty = qty - ? WHERE product_id = ?", 2200, 0, true);
  int charge = add_sql(c, "INSERT INTO charges(order_id, amount, card_token) VALUES (?, ?, ?)", 3000, 0, true);
  int limits = add_sql(c, "SELECT daily_limit, used FROM card_limits WHERE card_token = ?", 800, 1, false);
  int report = add_sql(c, "SELECT o.id, o.total, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.created >= ?", 60000, 20000, false);
  int search = add_sql(c, "SELECT id, title FROM products WHERE title LIKE ? ORDER BY rank LIMIT ?", 15000, 100, false);
  int item = add_sql(c, "SELECT * FROM products WHERE id = ?", 700, 1, false);

  int charge_url = add_text(c, "http://payments:8081/charge");
  int export_url = add_text(c, "http://reports:8082/export/{id}");
  int payments_host = add_text(c, "payments");
  int reports_host = add_text(c, "reports");
  c.db_text = add_text(c, "postgresql://db:5432/shop");

  // Callees first, so that callers can name them by index.
  c.names.push_back({"payments", "POST /charge", 0, 45, 0.5, {limits, charge}, 2, 2, std::nullopt, 0.01});
  int charge_name = 0;
  c.names.push_back({"reports", "GET /export/{id}", 0, 900, 0.35, {report}, 1, 1, std::nullopt, 0.005});
  int export_name = 1;
  c.names.push_back({"shop", "GET /orders/{id}", 30, 25, 0.6, {order_by_id, order_lines, customer}, 2, 3, std::nullopt, 0.01});
  c.names.push_back({"shop", "GET /products", 20, 40, 0.7, {products, stock}, 1, 2, std::nullopt, 0.008});
  c.names.push_back({"shop", "GET /cart", 20, 12, 0.5, {cart, stock}, 1, 2, std::nullopt, 0.005});
  c.names.push_back({"shop", "POST /checkout", 8, 150, 0.6,
                     {cart, insert_order, insert_line, insert_line, update_stock}, 3, 5,
                     Catalog::Call{charge_url, payments_host, charge_name, false}, 0.03});
  c.names.push_back({"shop", "GET /health", 5, 0.4, 0.3, {}, 0, 0, std::nullopt, 0.0});
  c.names.push_back({"portal", "GET /reports/{id}", 2, 1200, 0.3, {customer}, 1, 1,
                     Catalog::Call{export_url, reports_host, export_name, true}, 0.02});
  c.names.push_back({"catalog", "GET /search", 10, 70, 0.8, {search}, 1, 1, std::nullopt, 0.01});
  c.names.push_back({"catalog", "GET /items/{id}", 15, 8, 0.5, {item, stock}, 1, 2, std::nullopt, 0.005});

  c.errors = {
      "HTTP 500: database is locked",
      "HTTP 500: upstream timed out after 5000 ms",
      "HTTP 500: NullPointerException in OrderService.total",
      "HTTP 500: connection reset by peer",
      "HTTP 500: deadlock detected",
  };
  return c;
}

int Catalog::agent_for(const std::string& app, uint64_t pick) const {
  std::vector<int> matching;
  for (size_t i = 0; i < agents.size(); ++i)
    if (agents[i].app == app) matching.push_back(static_cast<int>(i));
  return matching[pick % matching.size()];
}

}  // namespace txray::gen
