// The trainer's sample printer: valid UTF-8 passes, anything else is escaped.
#include <catch2/catch.hpp>

#include <string>

#include "text.hpp"

TEST_CASE("sampled bytes print as valid UTF-8 with invalid bytes escaped", "[gpt]") {
  using gpt::printable_text;
  CHECK(printable_text("In the beginning\n") == "In the beginning\n");
  CHECK(printable_text("a\tb\x7f") == "a?b?");
  CHECK(printable_text("caf\xC3\xA9") == "caf\xC3\xA9");                 // U+00E9
  CHECK(printable_text("\xE2\x82\xAC") == "\xE2\x82\xAC");               // U+20AC
  CHECK(printable_text("\xF0\x9F\x98\x80") == "\xF0\x9F\x98\x80");       // U+1F600
  CHECK(printable_text("\xC3") == "\\xC3");                              // truncated
  CHECK(printable_text("\xC3(") == "\\xC3(");                            // bad continuation
  CHECK(printable_text("\xC0\xAF") == "\\xC0\\xAF");                     // overlong
  CHECK(printable_text("\xED\xA0\x80") == "\\xED\\xA0\\x80");            // surrogate
  CHECK(printable_text("\xF4\x90\x80\x80") == "\\xF4\\x90\\x80\\x80");   // above U+10FFFF
  CHECK(printable_text("\xFF\x80") == "\\xFF\\x80");
}
