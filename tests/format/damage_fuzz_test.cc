// Random damage to a good file: every outcome is either a DesignError or the very same design
// (e.g. a changed space); never a crash, another exception type, or a different design.
#include <gtest/gtest.h>

#include <random>

#include "cerar/format/design_file.h"
#include "cerar/errors.h"
#include "test_support.h"

namespace cerar {
namespace {

TEST(DamageFuzz, EveryDamagedCopyIsRejectedOrIdentical) {
  const Design original = testing_support::RandomDesign(3, 2, 17);
  const std::string good = SerializeDesign(original);
  std::mt19937_64 rng(2024);
  int rejected = 0, identical = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = good;
    const int edits = 1 + int(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0: text[at] = char(rng() % 256); break;             // overwrite a byte
        case 1: text[at] = char(text[at] ^ (1 << (rng() % 8))); break;  // flip a bit
        case 2: text.erase(at, 1 + rng() % 8); break;             // drop bytes
        default: text.resize(at); break;                          // truncate
      }
      if (text.empty()) text.push_back(' ');
    }
    try {
      const Design loaded = ParseDesign(text, "fuzz");
      EXPECT_EQ(loaded.fingerprint(), original.fingerprint()) << text;
      EXPECT_EQ(SerializeDesign(loaded), good) << text;
      ++identical;
    } catch (const DesignError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("fuzz: ", 0), 0u) << e.what();
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "unexpected exception type: " << e.what();
    }
  }
  EXPECT_GT(rejected, 2500);  // nearly every random edit breaks something
  RecordProperty("identical", identical);
}

}  // namespace
}  // namespace cerar
