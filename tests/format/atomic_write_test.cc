// WriteFileAtomically / SaveDesign: complete files or nothing, never a leftover temporary.
#include <signal.h>
#include <sys/resource.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cerar/format/design_file.h"
#include "cerar/format/errors.h"
#include "test_support.h"

namespace cerar {
namespace {

using ::testing::HasSubstr;
using testing_support::RandomDesign;
using testing_support::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AtomicWrite, WritesAndReplacesWholeContents) {
  TempDir dir;
  const std::string path = dir / "out.txt";
  WriteFileAtomically(path, std::string(100000, 'x'));
  EXPECT_EQ(ReadAll(path), std::string(100000, 'x'));
  WriteFileAtomically(path, "short\n");
  EXPECT_EQ(ReadAll(path), "short\n");
  WriteFileAtomically(dir / "empty.txt", "");
  EXPECT_EQ(ReadAll(dir / "empty.txt"), "");
  auto entries = dir.Entries();
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"empty.txt", "out.txt"}));
}

TEST(AtomicWrite, MissingFolderThrowsNamingPath) {
  TempDir dir;
  const std::string path = dir / "missing/out.json";
  try {
    SaveDesign(RandomDesign(2, 1, 1), path);
    FAIL();
  } catch (const IoError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
  }
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(AtomicWrite, ParentIsAFileThrows) {
  TempDir dir;
  WriteFileAtomically(dir / "plain", "x");
  EXPECT_THROW(WriteFileAtomically(dir / "plain/out.json", "y"), IoError);
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"plain"});
}

TEST(AtomicWrite, FailedRenameLeavesNoTemporary) {
  // The target is a non-empty folder: the temporary is written, the rename fails.
  TempDir dir;
  const std::string target = dir / "target";
  std::filesystem::create_directory(target);
  WriteFileAtomically(target + "/keep", "k");
  try {
    SaveDesign(RandomDesign(3, 2, 1), target);
    FAIL();
  } catch (const IoError& e) {
    EXPECT_THAT(e.what(), HasSubstr(target));
    EXPECT_THAT(e.what(), HasSubstr("rename"));
  }
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"target"});
  EXPECT_EQ(ReadAll(target + "/keep"), "k");
}

TEST(AtomicWrite, FailedWriteLeavesOldFileAndNoTemporary) {
  // A file-size limit makes write() fail part-way (EFBIG): the old file must stay as it was.
  TempDir dir;
  const std::string path = dir / "design.json";
  WriteFileAtomically(path, "old contents\n");
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* previous = signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    WriteFileAtomically(path, std::string(1 << 20, 'n'));
  } catch (const IoError& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, previous);
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("write failed"));
  EXPECT_EQ(ReadAll(path), "old contents\n");
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"design.json"});
}

}  // namespace
}  // namespace cerar
