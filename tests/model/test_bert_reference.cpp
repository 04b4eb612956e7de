// Checks train_gpt --arch bert (examples/gpt/model.hpp, mlm.hpp) against PyTorch, tensor by
// tensor, from the debug states scripts/reference_bert.py wrote (post-LN as the original BERT,
// and --pre-ln): logits, loss over the masked positions, every gradient and 10 AdamW steps,
// with the tolerances of reference_check.hpp. Also: the debug state's masks are mlm.hpp's, and
// the masking is by whole words, at the rate, 80/10/10, and a function of (seed, index) only.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "mlm.hpp"
#include "reference_check.hpp"

TEST_CASE("bert (post-LN) matches the PyTorch reference", "[model][reference][bert]") {
  gpt_test::check_reference("bert");
}
TEST_CASE("bert (pre-LN) matches the PyTorch reference", "[model][reference][bert]") {
  gpt_test::check_reference("bert_preln");
}

TEST_CASE("the reference script masks as mlm.hpp does", "[model][bert]") {
  for (const char* name : {"bert", "bert_preln"}) {
    const gpt_test::debug_state s = gpt_test::load(name);
    for (int i = 0; i < s.B; ++i) {
      // the unmasked sequence: the target where one is predicted, else the input
      std::vector<int> tok(static_cast<std::size_t>(s.T)), tgt(tok.size());
      for (int t = 0; t < s.T; ++t) {
        const std::size_t j = static_cast<std::size_t>(i * s.T + t);
        tok[static_cast<std::size_t>(t)] = s.targets[j] >= 0 ? s.targets[j] : s.inputs[j];
      }
      gpt::mlm_mask(tok.data(), tgt.data(), s.T, s.cfg.mask_rate, s.mask_seed, static_cast<std::uint64_t>(i));
      INFO(name << " sequence " << i);
      CHECK(std::vector<int>(s.inputs.begin() + i * s.T, s.inputs.begin() + (i + 1) * s.T) == tok);
      CHECK(std::vector<int>(s.targets.begin() + i * s.T, s.targets.begin() + (i + 1) * s.T) == tgt);
    }
  }
}

TEST_CASE("masking is by whole words, at the rate, 80/10/10, from (seed, index)", "[model][bert]") {
  const std::string text =
      "And God said, Let there be light: and there was light. And God saw the light, that it was good; "
      "and God divided the light from the darkness. \xc3\xa9t\xc3\xa9 2024! ";
  const int T = 64;
  long masked = 0, random = 0, kept = 0, predicted = 0;
  for (std::uint64_t index = 0; index < 4000; ++index) {
    std::vector<int> raw(T), tok, tgt(T);
    raw[0] = gpt::bert_token::cls;
    raw[T - 1] = gpt::bert_token::sep;
    for (int t = 1; t < T - 1; ++t)
      raw[t] = static_cast<unsigned char>(text[(index * 7 + static_cast<std::uint64_t>(t)) % text.size()]);
    tok = raw;
    const int n = gpt::mlm_mask(tok.data(), tgt.data(), T, 0.15f, 99, index);
    const int want = static_cast<int>(0.15 * (T - 2) + 0.5);  // 9
    REQUIRE(n <= want);
    REQUIRE(n >= want - 3);  // a unit that does not fit is skipped; shorter ones fill the rest
    int counted = 0;
    for (int t = 0; t < T; ++t) {
      if (tgt[t] < 0) {
        REQUIRE(tok[t] == raw[t]);  // not predicted: untouched
        continue;
      }
      ++counted;
      REQUIRE(tgt[t] == raw[t]);
      REQUIRE(t > 0);
      REQUIRE(t < T - 1);
      REQUIRE(!gpt::mlm_space_byte(raw[t]));
      // whole words: a predicted word byte's neighbours inside the word are predicted too
      if (gpt::mlm_word_byte(raw[t])) {
        if (t > 1 && gpt::mlm_word_byte(raw[t - 1])) REQUIRE(tgt[t - 1] >= 0);
        if (t < T - 2 && gpt::mlm_word_byte(raw[t + 1])) REQUIRE(tgt[t + 1] >= 0);
      }
      if (tok[t] == gpt::bert_token::mask) ++masked;
      else if (tok[t] != raw[t]) ++random;
      else ++kept;
    }
    REQUIRE(counted == n);
    predicted += n;
    // the same (seed, index) masks the same way; another seed differently (somewhere)
    std::vector<int> again = raw, tgt2(T);
    gpt::mlm_mask(again.data(), tgt2.data(), T, 0.15f, 99, index);
    REQUIRE(again == tok);
    REQUIRE(tgt2 == tgt);
  }
  const double p = static_cast<double>(predicted);
  INFO("mask " << masked / p << " random " << random / p << " kept " << kept / p);
  CHECK(std::abs(masked / p - 0.8) < 0.01);
  CHECK(std::abs(random / p - 0.1) < 0.01);  // a random byte equal to the original counts as kept
  CHECK(std::abs(kept / p - 0.1) < 0.01);
  std::vector<int> a(T, 'a'), b(T, 'a'), ta(T), tb(T);
  for (int t = 1; t < T - 1; t += 2) a[t] = b[t] = ' ';
  gpt::mlm_mask(a.data(), ta.data(), T, 0.15f, 1, 0);
  gpt::mlm_mask(b.data(), tb.data(), T, 0.15f, 2, 0);
  CHECK(ta != tb);
}

TEST_CASE("byte masking (--mask-unit byte): single non-whitespace bytes, at the rate, from (seed, index)", "[model][bert]") {
  const std::string text = "And God said, Let there be light: and there was light. \xc3\xa9t\xc3\xa9 2024! ";
  const int T = 64;
  const int want = static_cast<int>(0.15 * (T - 2) + 0.5);  // 9
  bool split_word = false;
  for (std::uint64_t index = 0; index < 2000; ++index) {
    std::vector<int> raw(T), tok, tgt(T);
    raw[0] = gpt::bert_token::cls;
    raw[T - 1] = gpt::bert_token::sep;
    for (int t = 1; t < T - 1; ++t)
      raw[t] = static_cast<unsigned char>(text[(index * 5 + static_cast<std::uint64_t>(t)) % text.size()]);
    tok = raw;
    // every unit is one byte, so exactly the rate's count of positions is predicted
    REQUIRE(gpt::mlm_mask(tok.data(), tgt.data(), T, 0.15f, 7, index, false) == want);
    for (int t = 1; t < T - 1; ++t) {
      if (tgt[t] < 0) continue;
      REQUIRE(!gpt::mlm_space_byte(raw[t]));
      // somewhere a word byte is predicted while its neighbour inside the word is not
      if (gpt::mlm_word_byte(raw[t]) && gpt::mlm_word_byte(raw[t + 1]) && t + 1 < T - 1 && tgt[t + 1] < 0)
        split_word = true;
    }
    std::vector<int> again = raw, tgt2(T);
    gpt::mlm_mask(again.data(), tgt2.data(), T, 0.15f, 7, index, false);
    REQUIRE(again == tok);
    REQUIRE(tgt2 == tgt);
  }
  CHECK(split_word);
}
