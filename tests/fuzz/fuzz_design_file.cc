// libFuzzer harness for the design-file reader (docs/hardening.md). Any input must either load
// or be refused with a cerar::Error whose message is one line of printable text; a loaded design
// must serialise and read back to the same design. Anything else (a crash, a sanitizer report,
// another exception type, a message with a control character) is a finding.
//
// Built only with clang and CERAR_FUZZ=ON (scripts/sanitize); tests/fuzz/CMakeLists.txt.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "bounded_json.h"
#include "canonical.h"
#include "cerar/format/design_file.h"
#include "cerar/format/design_parts.h"
#include "cerar/errors.h"

namespace {

void RequireOneCleanLine(const char* message) {
  for (const char* p = message; *p; ++p) {
    const auto ch = static_cast<unsigned char>(*p);
    if (ch < 0x20 || ch == 0x7f) {
      std::fprintf(stderr, "control character 0x%02x in message: %s\n", ch, message);
      __builtin_trap();
    }
  }
}

void RoundTrip(const cerar::Design& design) {
  const cerar::Design again = cerar::ParseDesign(cerar::SerializeDesign(design), "round trip");
  if (again.fingerprint() != design.fingerprint() ||
      again.provenance().parameters != design.provenance().parameters ||
      again.notes() != design.notes()) {
    std::fprintf(stderr, "a loaded design does not read back the same\n");
    __builtin_trap();
  }
}

void Parse(const std::string& text) {
  try {
    RoundTrip(cerar::ParseDesign(text, "fuzz input"));
  } catch (const cerar::Error& e) {
    RequireOneCleanLine(e.what());
  }
}

// The same bytes through LoadDesign: a memory file, so the streaming reader is fuzzed too.
void Load(const std::string& text) {
  const int fd = ::memfd_create("cerar-fuzz", MFD_CLOEXEC);
  if (fd < 0) return;
  if (::write(fd, text.data(), text.size()) == ssize_t(text.size())) {
    try {
      RoundTrip(cerar::LoadDesign("/proc/self/fd/" + std::to_string(fd)));
    } catch (const cerar::Error& e) {
      RequireOneCleanLine(e.what());
    }
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Parse(text);
  Load(text);
  // Almost every mutation breaks the integrity value, which the reader checks last. Re-signed,
  // the input also reaches what comes after it: Design::Create and the parameter walk.
  std::string resigned;
  try {
    nlohmann::json doc = cerar::detail::ParseBoundedJson("fuzz input", text);
    if (!doc.is_object() || !doc.contains("integrity")) return 0;
    doc["integrity"] = cerar::detail::IntegrityValue(doc);
    resigned = doc.dump();
  } catch (const std::exception&) {
    return 0;  // not JSON the reader accepts: covered above
  }
  Parse(resigned);
  return 0;
}
