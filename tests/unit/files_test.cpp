// The bounded reader (files.h): whole files and streams, never more than
// the limit + 1 byte of anything, whatever it is.
#include "gpusizer/util/files.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <sys/stat.h>

namespace gpusizer::files_test {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : path_((std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))).string()) {}
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A stream of endless 'a's that counts the bytes taken from it, one at a
// time so the count is exact.
class EndlessBuffer : public std::streambuf {
 public:
  std::size_t taken() const { return taken_; }

 protected:
  int_type underflow() override {
    byte_ = 'a';
    setg(&byte_, &byte_, &byte_ + 1);
    ++taken_;
    return traits_type::to_int_type(byte_);
  }

 private:
  char byte_ = 'a';
  std::size_t taken_ = 0;
};

TEST(ReadFile, ReadsARegularFileUpToTheLimitWhole) {
  TempFile file("gpu-sizer-read-file");
  std::ofstream(file.path()) << "0123456789";
  auto text = read_file(file.path(), 10);
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(text.value(), "0123456789");
}

TEST(ReadFile, AFileLargerThanTheLimitFailsNamingItTheLimitAndTheFlag) {
  TempFile file("gpu-sizer-read-file");
  std::ofstream(file.path()) << "0123456789";
  EXPECT_EQ(read_file(file.path(), 9, "--max-file-bytes").error(),
            file.path() + ": larger than 9 bytes (--max-file-bytes)");
  EXPECT_EQ(read_file(file.path(), 9).error(), file.path() + ": larger than 9 bytes");
}

TEST(ReadFile, ADeviceIsReadNoFurtherThanTheLimit) {
  EXPECT_EQ(read_file("/dev/zero", 1000, "--max-file-bytes").error(),
            "/dev/zero: larger than 1000 bytes (--max-file-bytes)");
  EXPECT_EQ(read_file("/dev/zero").error(), "/dev/zero: larger than 67108864 bytes");
}

TEST(ReadFile, AFifoHasNoSizeAndIsBoundedByTheRead) {
  TempFile fifo("gpu-sizer-read-fifo");
  ASSERT_EQ(::mkfifo(fifo.path().c_str(), 0600), 0);
  // 2000 bytes fit the pipe's buffer: the writer never waits on the reader.
  std::thread writer([&] { std::ofstream(fifo.path()) << std::string(2000, 'x'); });
  const auto text = read_file(fifo.path(), 1000);
  writer.join();
  EXPECT_EQ(text.error(), fifo.path() + ": larger than 1000 bytes");
}

TEST(ReadFile, AMissingFileNamesThePathAndTheSystemError) {
  EXPECT_EQ(read_file("/nonexistent/policy.yaml").error(),
            "cannot read /nonexistent/policy.yaml: No such file or directory");
}

TEST(ReadStream, ReadsAStreamWithinTheLimit) {
  std::istringstream in(std::string(100'000, 'y'));
  auto text = read_stream(in, "stdin", 100'000, "--max-file-bytes");
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(text.value(), std::string(100'000, 'y'));
}

TEST(ReadStream, AnEndlessStreamIsReadToTheLimitAndOneByte) {
  EndlessBuffer endless;
  std::istream in(&endless);
  EXPECT_EQ(read_stream(in, "stdin", 300'000, "--max-file-bytes").error(),
            "stdin: larger than 300000 bytes (--max-file-bytes)");
  EXPECT_EQ(endless.taken(), 300'001u);
}

}  // namespace
}  // namespace gpusizer::files_test
