// Unit tests of the order service's encodings: every codec round-trips requests and responses, and
// malformed input is rejected with a clear error instead of being half-read.
#include <gtest/gtest.h>

#include <stdexcept>

#include "codec_binary.h"
#include "codec_json.h"
#include "codec_soap.h"
#include "dataset.h"
#include "json_value.h"
#include "xml.h"

using namespace txray::samples::orders;

namespace {

Response customers_response() {
  Response r;
  r.customers = {make_customer(1), make_customer(2)};
  r.customers[1].name = "Ann <\"Quote\"> & Sons";  // characters every encoding must escape
  r.customers[1].city = "Seoul \xec\x84\x9c\xec\x9a\xb8";   // UTF-8 passes through
  return r;
}

Request customers_request() {
  Request q;
  q.method = Method::GetCustomers;
  q.customer_id = 4242;
  q.n = 50;
  return q;
}

}  // namespace

TEST(Dataset, IsDeterministicAndPinned) {
  EXPECT_EQ(make_customer(11).name, "Linda Lee");
  EXPECT_EQ(make_customer(11).email, "linda.lee11@example.com");
  EXPECT_EQ(make_customer(77), make_customer(77));
  EXPECT_NE(make_customer(77), make_customer(78));
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafull);  // the reference value of splitmix64
}

TEST(Binary, RoundTrips) {
  Request q = customers_request();
  Request back = binary::decode_request(binary::encode_request(q));
  EXPECT_EQ(back.method, Method::GetCustomers);
  EXPECT_EQ(back.customer_id, 4242);
  EXPECT_EQ(back.n, 50u);
  Response r = customers_response();
  EXPECT_EQ(binary::decode_response(Method::GetCustomers, binary::encode_response(Method::GetCustomers, r)).customers,
            r.customers);
  Response err;
  err.code = Code::NotFound;
  err.error = "no order 9";
  Response e2 = binary::decode_response(Method::GetOrderStatus, binary::encode_response(Method::GetOrderStatus, err));
  EXPECT_EQ(e2.code, Code::NotFound);
  EXPECT_EQ(e2.error, "no order 9");
}

TEST(Binary, RejectsMalformed) {
  std::string body = binary::encode_request(customers_request());
  EXPECT_THROW(binary::decode_request(body.substr(0, body.size() - 1)), std::runtime_error);  // truncated
  EXPECT_THROW(binary::decode_request(body + "x"), std::runtime_error);                       // trailing
  EXPECT_THROW(binary::decode_request(std::string(1, '\x09')), std::runtime_error);          // method
  EXPECT_THROW(binary::decode_request(""), std::runtime_error);
  std::string resp = binary::encode_response(Method::GetCustomers, customers_response());
  resp[1] = '\xff';  // a row count far beyond the page limit
  EXPECT_THROW(binary::decode_response(Method::GetCustomers, resp), std::runtime_error);
}

TEST(Json, RoundTripsWithEscapes) {
  Response r = customers_response();
  std::string text = json::encode_response(Method::GetCustomers, r);
  EXPECT_NE(text.find("Ann <\\\"Quote\\\"> & Sons"), std::string::npos) << text;
  EXPECT_EQ(json::decode_response(Method::GetCustomers, 200, text).customers, r.customers);
  Request q = json::decode_request(Method::GetCustomers, json::encode_request(customers_request()));
  EXPECT_EQ(q.customer_id, 4242);
  EXPECT_EQ(q.n, 50u);
}

TEST(Json, ValueParser) {
  auto v = jsonv::parse(R"( {"a": [1, -2, 3.5e1, true, false, null], "s": "x\u00e9\ud83d\ude00\n", "o": {}} )");
  ASSERT_EQ(v.at("a").items.size(), 6u);
  EXPECT_EQ(v.at("a").items[1].as_int(), -2);
  EXPECT_EQ(v.at("a").items[2].type, jsonv::Value::Type::Double);
  EXPECT_DOUBLE_EQ(v.at("a").items[2].d, 35.0);
  EXPECT_EQ(v.at("s").as_string(), "x\xc3\xa9\xf0\x9f\x98\x80\n");
  EXPECT_EQ(jsonv::write(jsonv::parse(R"({"k":"a\"b\\c","n":[1,2]})")), R"({"k":"a\"b\\c","n":[1,2]})");
  for (const char* bad : {"", "{", "{\"a\" 1}", "[1,]", "\"open", "01x", "{\"a\":1} x", "\"\\q\"", "nul"})
    EXPECT_THROW(jsonv::parse(bad), std::runtime_error) << bad;
  EXPECT_THROW(jsonv::parse(std::string(100, '[') + std::string(100, ']')), std::runtime_error);  // depth
  EXPECT_THROW(json::decode_request(Method::GetOrderStatus, R"({"orderId":"7"})"), std::runtime_error);
  EXPECT_THROW(json::decode_request(Method::GetOrderStatus, R"({"order":7})"), std::runtime_error);
}

TEST(Soap, RoundTripsWithEscapes) {
  Response r = customers_response();
  std::string doc = soap::encode_response(Method::GetCustomers, r);
  EXPECT_NE(doc.find("Ann &lt;&quot;Quote&quot;&gt; &amp; Sons"), std::string::npos);
  EXPECT_NE(doc.find("soapenc:arrayType=\"Customer[2]\""), std::string::npos);
  EXPECT_EQ(soap::decode_response(Method::GetCustomers, 200, doc).customers, r.customers);
  Request q = soap::decode_request(Method::GetCustomers, soap::encode_request(customers_request()));
  EXPECT_EQ(q.customer_id, 4242);
  EXPECT_EQ(q.n, 50u);
  Response fault;
  fault.code = Code::NotFound;
  fault.error = "no order 5";
  Response f = soap::decode_response(Method::GetOrderStatus, 404, soap::encode_response(Method::GetOrderStatus, fault));
  EXPECT_EQ(f.code, Code::NotFound);
  EXPECT_EQ(f.error, "no order 5");
}

TEST(Soap, XmlReader) {
  auto e = xml::parse("<?xml version='1.0'?><!-- c --><a:r x='1' y=\"&lt;2&gt;\"><b>t&#65;&#x42;&amp;</b><c/></a:r>");
  EXPECT_EQ(e.name, "r");
  ASSERT_EQ(e.attributes.size(), 2u);
  EXPECT_EQ(e.attributes[1].second, "<2>");
  ASSERT_NE(e.child("b"), nullptr);
  EXPECT_EQ(e.child("b")->text, "tAB&");
  EXPECT_NE(e.find("c"), nullptr);
  for (const char* bad : {"", "<a>", "<a></b>", "<a x=1/>", "<a>&bogus;</a>", "<a/><b/>", "<a x='<'/>"})
    EXPECT_THROW(xml::parse(bad), std::runtime_error) << bad;
  EXPECT_THROW(soap::decode_request(Method::GetOrderStatus, "<Envelope><Body/></Envelope>"), std::runtime_error);
  EXPECT_THROW(soap::decode_request(Method::GetOrderStatus,
                                    "<Envelope><Body><GetOrderStatus><orderId>12x</orderId></GetOrderStatus></Body></Envelope>"),
               std::runtime_error);
}
