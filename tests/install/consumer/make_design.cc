// Consumer of cerar::design: makes an eps design with the toolkit and reads its provenance
// parameters (design_parts.h, nlohmann/json through cerar::design).
#include <cerar/design/toolkit.h>
#include <cerar/format/design_parts.h>

#include <cstdio>

int main() {
  try {
    cerar::design::ConstructionOptions o;
    o.N = 4;
    o.c = 8;
    o.eps = 1e-3;
    const cerar::Design d = cerar::design::MakeConstruction(o);
    const double eps = d.provenance().parameters.at("eps").get<double>();
    std::printf("make_design: N = %d, c = %d, eps = %g, err_rms = %.3g\n", d.N(), d.c(), eps,
                d.figures()->err_rms);
    return eps == 1e-3 && d.figures()->err_rms > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_design: %s\n", e.what());
    return 1;
  }
}
