// A gtest fixture for recorder tests: fake clocks and a collecting sink installed around each test, and
// begin()/end() for one current transaction of a fixed name, kind and status (given by the subclass).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>

#include "core/config.h"
#include "support/test_support.h"
#include "core/transaction.h"

namespace txray::test {

class RecorderFixture : public ::testing::Test {
 protected:
  RecorderFixture(std::string_view name, std::string_view kind, int32_t status)
      : name_(name), kind_(kind), status_(status) {}
  void SetUp() override {
    FakeClock::install();
    Collected::install();
  }
  void TearDown() override {
    FakeClock::uninstall();
    tx::set_sink(nullptr);
    tx::make_current(nullptr);
    set_config(Config{});
  }
  Transaction* begin() {
    Transaction* t = tx::begin(name_, kind_);
    tx::make_current(t);
    return t;
  }
  Transaction& end(Transaction* t) {
    tx::end(t, status_, "");
    return *Collected::txs.back();
  }

 private:
  std::string_view name_;
  std::string_view kind_;
  int32_t status_;
};

}  // namespace txray::test
