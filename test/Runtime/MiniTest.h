//===- MiniTest.h - the GoogleTest subset the runtime tests use -----------===//
//
// Used only where GoogleTest is not installed (the GPU machines), so the
// tests still build and run there against the cuda backend. Supports TEST,
// TEST_F, GTEST_SKIP, EXPECT_/ASSERT_ {TRUE, FALSE, EQ, NE, LT, LE, GT, GE}
// with streamed messages, and a main that runs every test (or those whose
// "Suite.Name" contains the first argument).
//
//===----------------------------------------------------------------------===//
#ifndef OFFLOAD_RT_TEST_MINITEST_H
#define OFFLOAD_RT_TEST_MINITEST_H

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace testing {

class Test {
public:
  virtual ~Test() = default;
  virtual void SetUp() {}
  virtual void TearDown() {}
  virtual void TestBody() = 0;
};

namespace mini {

struct State {
  bool failed = false;
  bool skipped = false;
};
inline State &state() {
  static State s;
  return s;
}

struct Registered {
  std::string name;
  std::function<Test *()> make;
};
inline std::vector<Registered> &registry() {
  static std::vector<Registered> r;
  return r;
}
inline bool add(const char *suite, const char *name,
                std::function<Test *()> make) {
  registry().push_back({std::string(suite) + "." + name, std::move(make)});
  return true;
}

/// Collects a streamed message; reports on destruction.
class Failure {
public:
  Failure(const char *file, int line, std::string what)
      : file_(file), line_(line), what_(std::move(what)) {}
  ~Failure() {
    state().failed = true;
    std::fprintf(stderr, "%s:%d: Failure\n%s %s\n", file_, line_,
                 what_.c_str(), extra_.str().c_str());
  }
  template <typename T> Failure &operator<<(const T &v) {
    extra_ << v;
    return *this;
  }

private:
  const char *file_;
  int line_;
  std::string what_;
  std::ostringstream extra_;
};

class Skip {
public:
  ~Skip() {
    state().skipped = true;
    std::fprintf(stderr, "skipped: %s\n", why_.str().c_str());
  }
  template <typename T> Skip &operator<<(const T &v) {
    why_ << v;
    return *this;
  }

private:
  std::ostringstream why_;
};

template <typename T> std::string show(const T &v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
inline std::string show(std::nullptr_t) { return "nullptr"; }

template <typename A, typename B>
std::string compare(const char *op, const char *a, const char *b, const A &va,
                    const B &vb) {
  return std::string("Expected: ") + a + " " + op + " " + b +
         "\n  actual: " + show(va) + " vs " + show(vb);
}

/// Lets a check end in `<< message` and still be one void expression
/// (assignment binds looser than <<), as GoogleTest does.
struct Voidify {
  template <typename T> void operator=(const T &) {}
};

/// Runs the registered tests; returns the process exit code.
inline int runAll(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : "";
  int passed = 0, failed = 0, skipped = 0;
  for (const Registered &r : registry()) {
    if (r.name.find(filter) == std::string::npos)
      continue;
    state() = State();
    std::fprintf(stderr, "[ RUN      ] %s\n", r.name.c_str());
    Test *t = r.make();
    t->SetUp();
    if (!state().failed && !state().skipped)
      t->TestBody();
    t->TearDown();
    delete t;
    const char *verdict = state().failed    ? "[  FAILED  ]"
                          : state().skipped ? "[  SKIPPED ]"
                                            : "[       OK ]";
    std::fprintf(stderr, "%s %s\n", verdict, r.name.c_str());
    (state().failed ? failed : state().skipped ? skipped : passed)++;
  }
  std::fprintf(stderr, "%d passed, %d failed, %d skipped\n", passed, failed,
               skipped);
  return failed ? 1 : 0;
}

} // namespace mini
} // namespace testing

#define MINI_CHECK_(cond, text, onfail)                                        \
  if (cond)                                                                    \
    ;                                                                          \
  else                                                                         \
    onfail ::testing::mini::Voidify() =                                        \
        ::testing::mini::Failure(__FILE__, __LINE__, text)

#define MINI_CMP_(op, a, b, onfail)                                            \
  MINI_CHECK_((a)op(b), ::testing::mini::compare(#op, #a, #b, (a), (b)),      \
              onfail)

#define MINI_NOTHING_
#define MINI_RETURN_ return

#define EXPECT_TRUE(c) MINI_CHECK_(c, "Expected true: " #c, MINI_NOTHING_)
#define EXPECT_FALSE(c) MINI_CHECK_(!(c), "Expected false: " #c, MINI_NOTHING_)
#define ASSERT_TRUE(c) MINI_CHECK_(c, "Expected true: " #c, MINI_RETURN_)
#define ASSERT_FALSE(c) MINI_CHECK_(!(c), "Expected false: " #c, MINI_RETURN_)
#define EXPECT_EQ(a, b) MINI_CMP_(==, a, b, MINI_NOTHING_)
#define EXPECT_NE(a, b) MINI_CMP_(!=, a, b, MINI_NOTHING_)
#define EXPECT_LT(a, b) MINI_CMP_(<, a, b, MINI_NOTHING_)
#define EXPECT_LE(a, b) MINI_CMP_(<=, a, b, MINI_NOTHING_)
#define EXPECT_GT(a, b) MINI_CMP_(>, a, b, MINI_NOTHING_)
#define EXPECT_GE(a, b) MINI_CMP_(>=, a, b, MINI_NOTHING_)
#define ASSERT_EQ(a, b) MINI_CMP_(==, a, b, MINI_RETURN_)
#define ASSERT_NE(a, b) MINI_CMP_(!=, a, b, MINI_RETURN_)
#define ASSERT_LT(a, b) MINI_CMP_(<, a, b, MINI_RETURN_)
#define ASSERT_LE(a, b) MINI_CMP_(<=, a, b, MINI_RETURN_)
#define ASSERT_GT(a, b) MINI_CMP_(>, a, b, MINI_RETURN_)
#define ASSERT_GE(a, b) MINI_CMP_(>=, a, b, MINI_RETURN_)
#define GTEST_SKIP()                                                           \
  return ::testing::mini::Voidify() = ::testing::mini::Skip()

#define MINI_CLASS_(suite, name) suite##_##name##_Test
#define MINI_DEFINE_(suite, name, base)                                        \
  class MINI_CLASS_(suite, name) : public base {                               \
  public:                                                                      \
    void TestBody() override;                                                  \
  };                                                                           \
  static const bool suite##_##name##_registered = ::testing::mini::add(        \
      #suite, #name, [] { return new MINI_CLASS_(suite, name)(); });           \
  void MINI_CLASS_(suite, name)::TestBody()

#define TEST(suite, name) MINI_DEFINE_(suite, name, ::testing::Test)
#define TEST_F(fixture, name) MINI_DEFINE_(fixture, name, fixture)

#endif // OFFLOAD_RT_TEST_MINITEST_H
