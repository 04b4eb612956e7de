// tools/common/cli.hpp: what hcomm-codec and hcomm-collective share on top of CLI11 and
// nlohmann::json (both used by the tools only, never by the installed hcomm headers).
//
//   app.add_option("--iters", iters)->transform(tools::whole_number(1, 1000000));
//   app.add_option("--bytes", list)->transform(tools::list_of(tools::size_bytes(4, 4 * tools::GiB, 4)));
//   j["ratio"] = tools::rounded(ratio, 4);                      // 4 significant digits, or null
//
// Integer options are parsed here, not by CLI11's own conversion (strtoull with base 0, which
// wraps "-1", saturates "99999999999999999999" and reads "010" as octal): a whole decimal
// number, an optional K/M/G/T suffix (powers of 1024) for sizes, overflow detected, then the
// range. The validator rewrites the value in plain decimal, so the conversion that follows
// only ever sees a number in range. Each message names the option (CLI11 prefixes it).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "hcomm/core/error.hpp"

namespace tools {

inline constexpr std::uint64_t KiB = std::uint64_t{1} << 10, MiB = KiB << 10, GiB = MiB << 10, TiB = GiB << 10;

// "4G" for 2^32, "1536K" for 1.5 MiB, "3" for 3: the shortest exact form with a suffix.
inline std::string size_text(std::uint64_t v) {
  const struct { std::uint64_t unit; char suffix; } units[] = {{TiB, 'T'}, {GiB, 'G'}, {MiB, 'M'}, {KiB, 'K'}};
  for (const auto& u : units)
    if (v != 0 && v % u.unit == 0) return std::to_string(v / u.unit) + u.suffix;
  return std::to_string(v);
}

// A whole decimal number, with an optional size suffix when `sizes`: K/k/KiB, M/m/MiB,
// G/g/GiB, T/t/TiB. nullopt with `why` set when the text is not one or does not fit 64 bits.
inline std::optional<std::uint64_t> parse_u64(std::string_view s, bool sizes, std::string& why) {
  std::size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  if (digits == 0) {
    why = sizes ? "is not a size (a whole number of bytes with an optional K, M, G or T suffix)"
                : "is not a whole number";
    return std::nullopt;
  }
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    const auto d = static_cast<std::uint64_t>(s[i] - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) {
      why = "is too large (over 64 bits)";
      return std::nullopt;
    }
    v = v * 10 + d;
  }
  const std::string_view suffix = s.substr(digits);
  std::uint64_t unit = 1;
  if (!suffix.empty()) {
    if (sizes && (suffix == "K" || suffix == "k" || suffix == "KiB")) unit = KiB;
    else if (sizes && (suffix == "M" || suffix == "m" || suffix == "MiB")) unit = MiB;
    else if (sizes && (suffix == "G" || suffix == "g" || suffix == "GiB")) unit = GiB;
    else if (sizes && (suffix == "T" || suffix == "t" || suffix == "TiB")) unit = TiB;
    else {
      why = sizes ? "is not a size (a whole number of bytes with an optional K, M, G or T suffix)"
                  : "is not a whole number";
      return std::nullopt;
    }
  }
  if (v > std::numeric_limits<std::uint64_t>::max() / unit) {
    why = "is too large (over 64 bits)";
    return std::nullopt;
  }
  return v * unit;
}

namespace detail {
inline std::string quoted(const std::string& s) { return "'" + s + "'"; }
}  // namespace detail

namespace detail {
// Parses s (sizes: with K/M/G/T suffixes) into lo..hi, a multiple of `multiple`; rewrites
// s in plain decimal for CLI11; returns the error text, empty when s is good.
inline std::string check_number(std::string& s, bool sizes, std::uint64_t lo, std::uint64_t hi,
                                const std::string& range, std::uint64_t multiple, const std::string& unit_name) {
  std::string why;
  const auto v = parse_u64(s, sizes, why);
  if (!v) return detail::quoted(s) + " " + why + "; use " + range;
  if (*v < lo || *v > hi) return detail::quoted(s) + " is out of range " + range;
  if (*v % multiple != 0)
    return detail::quoted(s) + " is not a multiple of " + std::to_string(multiple) +
           (unit_name.empty() ? "" : " (" + unit_name + ")");
  s = std::to_string(*v);
  return {};
}
}  // namespace detail

// An unsigned whole number in lo..hi.
inline CLI::Validator whole_number(std::uint64_t lo, std::uint64_t hi) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator([=](std::string& s) { return detail::check_number(s, false, lo, hi, range, 1, {}); },
                        "in " + range);
}

// A whole number in lo..hi, or one of the negative numbers `specials` names (such as -1 for
// "auto").
inline CLI::Validator whole_number_or(std::uint64_t lo, std::uint64_t hi, std::vector<int> specials) {
  std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  for (std::size_t i = 0; i < specials.size(); ++i) range += (i ? ", " : " or ") + std::to_string(specials[i]);
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        for (int v : specials)
          if (s == std::to_string(v)) return {};
        return detail::check_number(s, false, lo, hi, range, 1, {});
      },
      "in " + range);
}

// A size in bytes in lo..hi and a multiple of `multiple` (what `multiple` is: `unit_name`).
inline CLI::Validator size_bytes(std::uint64_t lo, std::uint64_t hi, std::uint64_t multiple = 1,
                                 std::string unit_name = {}) {
  const std::string range = size_text(lo) + ".." + size_text(hi) + " bytes";
  return CLI::Validator(
      [=](std::string& s) { return detail::check_number(s, true, lo, hi, range, multiple, unit_name); },
      "SIZE in " + range);
}

// A comma-separated list whose every item passes `item` (items rewritten as `item` does).
// The option binds one string, so a stray word after it is an unexpected argument rather
// than another item.
inline CLI::Validator list_of(CLI::Validator item) {
  const std::string desc = item.get_description();
  return CLI::Validator(
      [item](std::string& s) -> std::string {
        std::string out;
        std::size_t a = 0;
        for (;;) {
          const std::size_t b = s.find(',', a);
          std::string piece = s.substr(a, b == std::string::npos ? std::string::npos : b - a);
          if (std::string why = item(piece); !why.empty()) return why;
          if (a != 0) out += ',';
          out += piece;
          if (b == std::string::npos) break;
          a = b + 1;
        }
        s = out;
        return {};
      },
      desc + "[,...]");
}

// Splits a list that list_of has checked.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  std::size_t a = 0;
  for (;;) {
    const std::size_t b = s.find(',', a);
    out.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) return out;
    a = b + 1;
  }
}

// v to `digits` significant digits (what printf's %.*g keeps), or null when not finite.
inline nlohmann::ordered_json rounded(double v, int digits) {
  if (!std::isfinite(v)) return nullptr;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return std::strtod(buf, nullptr);
}

// An hcomm::error's message without its "hcomm: <code>: " prefix.
inline std::string bare_message(const hcomm::error& e) {
  const std::string prefix = "hcomm: " + std::string(hcomm::to_string(e.code())) + ": ";
  std::string m = e.what();
  return m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m;
}

// One line, whatever the message holds (error messages may quote arguments).
inline std::string one_line(std::string m) {
  for (char& c : m)
    if (c == '\n' || c == '\r') c = ' ';
  return m;
}

}  // namespace tools
