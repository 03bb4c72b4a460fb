#include "codec_soap.h"

#include <cstdlib>
#include <stdexcept>

#include "xml.h"

// Messages are built as an xml::Element tree and then serialized, and parsed back into a tree: the way a
// generic SOAP stack works (the JSON channel does the same with json_value.h), so that the channels compare
// encodings, not hand-tuned code against a library.
namespace txray::samples::orders::soap {

namespace {

xml::Element envelope() {
  xml::Element env;
  env.name = "soap:Envelope";
  env.attributes = {{"xmlns:soap", "http://schemas.xmlsoap.org/soap/envelope/"},
                    {"xmlns:soapenc", "http://schemas.xmlsoap.org/soap/encoding/"},
                    {"xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance"},
                    {"xmlns:xsd", "http://www.w3.org/2001/XMLSchema"}};
  xml::Element body;
  body.name = "soap:Body";
  body.attributes = {{"soap:encodingStyle", "http://schemas.xmlsoap.org/soap/encoding/"}};
  env.children.push_back(std::move(body));
  return env;
}

xml::Element& body_child(xml::Element& env, std::string name, bool with_ns) {
  xml::Element e;
  e.name = std::move(name);
  if (with_ns) e.attributes = {{"xmlns", kNamespace}};
  env.children[0].children.push_back(std::move(e));
  return env.children[0].children.back();
}

void value(xml::Element& parent, const char* name, const char* type, std::string v) {
  xml::Element e;
  e.name = name;
  e.attributes = {{"xsi:type", type}};
  e.text = std::move(v);
  parent.children.push_back(std::move(e));
}

int64_t to_i64(const xml::Element* e, const char* what) {
  if (!e) throw std::runtime_error(std::string("SOAP: missing ") + what);
  char* end = nullptr;
  long long v = std::strtoll(e->text.c_str(), &end, 10);
  if (e->text.empty() || *end) throw std::runtime_error(std::string("SOAP: bad ") + what + ": " + e->text);
  return v;
}

std::string text_of(const xml::Element& parent, const char* name) {
  const xml::Element* e = parent.child(name);
  if (!e) throw std::runtime_error(std::string("SOAP: missing ") + name);
  return e->text;
}

const xml::Element& body_of(const xml::Element& env) {
  if (env.name != "Envelope") throw std::runtime_error("SOAP: the root element is not an Envelope");
  const xml::Element* body = env.child("Body");
  if (!body) throw std::runtime_error("SOAP: no Body in the Envelope");
  return *body;
}

}  // namespace

std::string action(Method m) { return std::string("\"") + kNamespace + method_name(m) + "\""; }

std::string encode_request(const Request& r) {
  xml::Element env = envelope();
  xml::Element& call = body_child(env, method_name(r.method), true);
  if (r.method == Method::GetOrderStatus) {
    value(call, "orderId", "xsd:long", std::to_string(r.order_id));
  } else {
    value(call, "customerId", "xsd:long", std::to_string(r.customer_id));
    value(call, "n", "xsd:int", std::to_string(r.n));
  }
  return xml::write(env);
}

Request decode_request(Method m, std::string_view body) {
  xml::Element env = xml::parse(body);
  const xml::Element& b = body_of(env);
  const xml::Element* call = b.child(method_name(m));
  if (!call) throw std::runtime_error(std::string("SOAP: the Body does not hold ") + method_name(m));
  Request r;
  r.method = m;
  if (m == Method::GetOrderStatus) {
    r.order_id = to_i64(call->child("orderId"), "orderId");
  } else {
    r.customer_id = to_i64(call->child("customerId"), "customerId");
    int64_t n = to_i64(call->child("n"), "n");
    if (n < 0 || n > 0xffffffffLL) throw std::runtime_error("SOAP: n out of range");
    r.n = static_cast<uint32_t>(n);
  }
  return r;
}

std::string encode_response(Method m, const Response& r) {
  xml::Element env = envelope();
  if (r.code != Code::Ok) {
    xml::Element& fault = body_child(env, "soap:Fault", false);
    value(fault, "faultcode", "xsd:string", r.code == Code::Error ? "soap:Server" : "soap:Client");
    value(fault, "faultstring", "xsd:string", r.error);
    return xml::write(env);
  }
  const std::string name = method_name(m);
  xml::Element& resp = body_child(env, name + "Response", true);
  if (m == Method::GetOrderStatus) {
    value(resp, "GetOrderStatusResult", "xsd:int", std::to_string(r.status));
    return xml::write(env);
  }
  xml::Element result;
  result.name = "GetCustomersResult";
  result.attributes = {{"xsi:type", "soapenc:Array"},
                       {"soapenc:arrayType", "Customer[" + std::to_string(r.customers.size()) + "]"}};
  for (const auto& c : r.customers) {
    xml::Element e;
    e.name = "Customer";
    e.attributes = {{"xsi:type", "Customer"}};
    value(e, "CustomerId", "xsd:long", std::to_string(c.id));
    value(e, "Name", "xsd:string", c.name);
    value(e, "Company", "xsd:string", c.company);
    value(e, "Email", "xsd:string", c.email);
    value(e, "Phone", "xsd:string", c.phone);
    value(e, "Address", "xsd:string", c.address);
    value(e, "City", "xsd:string", c.city);
    value(e, "Country", "xsd:string", c.country);
    value(e, "BalanceCents", "xsd:long", std::to_string(c.balance_cents));
    result.children.push_back(std::move(e));
  }
  resp.children.push_back(std::move(result));
  return xml::write(env);
}

Response decode_response(Method m, int http_status, std::string_view body) {
  xml::Element env = xml::parse(body);
  const xml::Element& b = body_of(env);
  Response r;
  if (const xml::Element* fault = b.child("Fault")) {
    // The HTTP status tells the kinds of client faults apart (http_status_of in channels.h).
    std::string code = text_of(*fault, "faultcode");
    r.code = code == "soap:Server" ? Code::Error : http_status == 404 ? Code::NotFound : Code::BadRequest;
    r.error = text_of(*fault, "faultstring");
    return r;
  }
  const std::string name = method_name(m);
  const xml::Element* resp = b.child(name + "Response");
  if (!resp) throw std::runtime_error("SOAP: no " + name + "Response in the Body");
  const xml::Element* result = resp->child(name + "Result");
  if (m == Method::GetOrderStatus) {
    r.status = static_cast<int32_t>(to_i64(result, "GetOrderStatusResult"));
    return r;
  }
  if (!result) throw std::runtime_error("SOAP: no GetCustomersResult");
  for (const auto& e : result->children) {
    if (e.name != "Customer") continue;
    Customer c;
    c.id = to_i64(e.child("CustomerId"), "CustomerId");
    c.name = text_of(e, "Name");
    c.company = text_of(e, "Company");
    c.email = text_of(e, "Email");
    c.phone = text_of(e, "Phone");
    c.address = text_of(e, "Address");
    c.city = text_of(e, "City");
    c.country = text_of(e, "Country");
    c.balance_cents = to_i64(e.child("BalanceCents"), "BalanceCents");
    r.customers.push_back(std::move(c));
  }
  return r;
}

}  // namespace txray::samples::orders::soap
