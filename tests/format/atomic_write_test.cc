// WriteFileAtomically / SaveDesign: complete files or nothing, never a leftover temporary.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cerar/format/design_file.h"
#include "cerar/errors.h"
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

// The system calls stop at a NUL: "d.json\0.bak" once wrote d.json, and loading it read d.json.
TEST(AtomicWrite, APathWithANulByteIsRefusedAndTouchesNothing) {
  TempDir dir;
  const std::string path = dir / "d.json";
  const std::string with_nul = path + std::string(1, '\0') + ".bak";
  try {
    SaveDesign(RandomDesign(2, 1, 1), with_nul);
    FAIL() << "saved";
  } catch (const IoError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a path with a NUL byte names no file"));
  }
  EXPECT_TRUE(dir.Entries().empty());
  SaveDesign(RandomDesign(2, 1, 1), path);
  try {
    LoadDesign(with_nul);
    FAIL() << "loaded";
  } catch (const IoError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a path with a NUL byte names no file"));
  }
}

TEST(AtomicWrite, ParentIsAFileThrows) {
  TempDir dir;
  WriteFileAtomically(dir / "plain", "x");
  EXPECT_THROW(WriteFileAtomically(dir / "plain/out.json", "y"), IoError);
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"plain"});
}

TEST(AtomicWrite, OnlyARegularFileIsReplaced) {
  // As root, `-o /dev/null` used to replace the system's /dev/null: a folder, symbolic link,
  // FIFO or read-only file at the path is refused before anything is written.
  TempDir dir;
  const std::string folder = dir / "folder", link = dir / "link", fifo = dir / "fifo",
                    target = dir / "target", readonly = dir / "readonly";
  std::filesystem::create_directory(folder);
  WriteFileAtomically(target, "target");
  std::filesystem::create_symlink(target, link);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  WriteFileAtomically(readonly, "readonly");
  std::filesystem::permissions(readonly, std::filesystem::perms::owner_read);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {folder, "it is a folder"},
      {link, "it is a symbolic link"},
      {fifo, "it is a FIFO"},
      {readonly, "the file is read-only (mode 0400)"}};
  for (const auto& [path, why] : cases) {
    try {
      SaveDesign(RandomDesign(3, 2, 1), path);
      ADD_FAILURE() << path << " was replaced";
    } catch (const IoError& e) {
      EXPECT_THAT(e.what(), HasSubstr("cannot write " + path + ": " + why));
    }
  }
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(ReadAll(target), "target");
  EXPECT_EQ(ReadAll(readonly), "readonly");
  auto entries = dir.Entries();
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"fifo", "folder", "link", "readonly", "target"}));
}

TEST(AtomicWrite, ReplaceNeverKeepsAnExistingFile) {
  TempDir dir;
  const std::string path = dir / "design.json";
  WriteFileAtomically(path, "first", Replace::kNever);
  EXPECT_THROW(WriteFileAtomically(path, "second", Replace::kNever), IoError);
  EXPECT_EQ(ReadAll(path), "first");
  WriteFileAtomically(path, "second", Replace::kRegularFile);
  EXPECT_EQ(ReadAll(path), "second");
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"design.json"});
}

TEST(AtomicWrite, LongNamesFitTheTemporaryIntoNameMax) {
  // A 250-byte name used to fail: its temporary (name + ".tmp.PID.N.T") exceeded NAME_MAX.
  TempDir dir;
  for (const std::size_t length : {200u, 250u, 255u}) {
    const std::string path = dir / std::string(length, 'n');
    WriteFileAtomically(path, "long name");
    EXPECT_EQ(ReadAll(path), "long name");
    std::filesystem::remove(path);
  }
  EXPECT_THROW(WriteFileAtomically(dir / std::string(256, 'n'), "x"), IoError);
  EXPECT_TRUE(dir.Entries().empty());
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
