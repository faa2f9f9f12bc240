// Writes design files for the Python reader's ctest: a good one, its fingerprint (as 16 hex
// digits in <file>.fingerprint) and a few damaged copies (bad_*.json).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>

#include "cerar/format/design_file.h"
#include "cerar/errors.h"
#include "test_support.h"

int main(int argc, char** argv) {
  // "--load FILE": load a file written elsewhere (by Python) and print its fingerprint.
  if (argc == 3 && std::string(argv[1]) == "--load") {
    try {
      const cerar::Design d = cerar::LoadDesign(argv[2]);
      std::printf("%016llx\n", static_cast<unsigned long long>(d.fingerprint()));
      return 0;
    } catch (const cerar::Error& e) {
      std::cerr << e.what() << "\n";
      return 2;
    }
  }
  if (argc != 2) {
    std::cerr << "usage: write_samples FOLDER | write_samples --load FILE\n";
    return 2;
  }
  const std::string dir = argv[1];
  using namespace cerar;
  DesignParts p = testing_support::RandomParts(5, 7, 42);
  p.encoders[0](0, 0) = -0.0;
  p.encoders[0](0, 1) = 5e-324;
  p.encoders[0](0, 2) = 1.0 / 3;
  p.decoders[0](0, 0) = 0.25;  // positive, so bad_edited.json below stays valid JSON
  p.figures->kappa_dec = std::numeric_limits<double>::infinity();
  p.exact_figures = p.figures;
  p.notes = {"sample for the Python reader, ε ≈ 1e-3"};
  const Design design = Design::Create(p, "sample");
  const std::string good = dir + "/good.json";
  SaveDesign(design, good);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(design.fingerprint()));
  WriteFileAtomically(good + ".fingerprint", std::string(hex) + "\n");

  const std::string text = SerializeDesign(design);
  WriteFileAtomically(dir + "/bad_truncated.json", text.substr(0, text.size() / 3));
  WriteFileAtomically(dir + "/bad_not_json.json", "not json at all\n");
  std::string edited = text;
  const auto at = edited.find("\"decoders\": [\n    [\n      [") + 27;
  edited.insert(at, "1");  // prefix a digit to D[0][0][0]: a valid number, old integrity
  WriteFileAtomically(dir + "/bad_edited.json", edited);
  std::string version = text;
  version.replace(version.find("\"version\": 1"), 12, "\"version\": 7");
  WriteFileAtomically(dir + "/bad_version.json", version);
  std::cout << "wrote " << good << " and 4 damaged copies\n";
  return 0;
}
