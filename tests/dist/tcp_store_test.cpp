// The rendezvous store (label cpu): our client against our server (c10d's protocol: set, get, wait, add,
// check, the key prefix, a cancelled wait), a peer that is not a store, and, where PyTorch is installed,
// our client against PyTorch's TCPStore server and PyTorch's client against ours.

#include "dist/tcp_store.h"

#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/common/error_of.h"
#include "tests/common/pytorch_tools.h"

namespace engine::dist {
namespace {

using std::chrono::milliseconds;

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<char>& v) { return {v.begin(), v.end()}; }

using engine::testing::error_of;

TEST(TcpStore, ClientsOfOneServerShareKeysAndCounters) {
  const int port = find_free_port();
  TcpStore server("127.0.0.1", port, /*is_server=*/true, milliseconds(5000));
  TcpStore client("127.0.0.1", port, /*is_server=*/false, milliseconds(5000));
  server.set("a", bytes("alpha"));
  EXPECT_EQ(text(client.get("a")), "alpha");
  client.set("empty", {});
  EXPECT_TRUE(server.get("empty").empty());
  EXPECT_EQ(client.add("n", 2), 2);
  EXPECT_EQ(server.add("n", 3), 5);
  EXPECT_EQ(text(client.get("n")), "5");  // counters are decimal text, as in c10d
  EXPECT_TRUE(client.check({"a", "n"}));
  EXPECT_FALSE(client.check({"a", "missing"}));
  EXPECT_EQ(client.local_address(), "127.0.0.1");
}

TEST(TcpStore, AWaiterIsWokenWhenTheLastKeyIsSet) {
  const int port = find_free_port();
  TcpStore server("127.0.0.1", port, true, milliseconds(5000));
  TcpStore client("127.0.0.1", port, false, milliseconds(5000));
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(100));
    server.set("x", bytes("1"));
    std::this_thread::sleep_for(milliseconds(100));
    server.set("y", bytes("2"));
  });
  const auto start = std::chrono::steady_clock::now();
  client.wait({"x", "y"});
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  setter.join();
  EXPECT_GE(waited, 0.15);  // not before y was set
  EXPECT_EQ(text(client.get("y")), "2");
}

// A wait that times out is cancelled on the server (CANCEL_WAIT): the error names the key, and the same
// connection serves the next requests (a later set of the key must not leave a stray answer behind).
TEST(TcpStore, ATimedOutWaitNamesTheKeyAndLeavesTheConnectionUsable) {
  const int port = find_free_port();
  TcpStore server("127.0.0.1", port, true, milliseconds(5000));
  TcpStore client("127.0.0.1", port, false, milliseconds(300));
  const std::string msg = error_of([&] { client.get("never"); });
  EXPECT_NE(msg.find("'/never'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("300 ms"), std::string::npos) << msg;
  server.set("never", bytes("late"));
  client.set("after", bytes("ok"));
  EXPECT_EQ(text(client.get("after")), "ok");
  EXPECT_EQ(text(client.get("never")), "late");
}

// torchrun's restarts: attempt N's keys live under /worker/attempt_N/, so a restarted attempt never reads a
// NCCL unique id or a gloo address its predecessor left behind.
TEST(TcpStore, KeyPrefixesKeepAttemptsApart) {
  const int port = find_free_port();
  TcpStore server("127.0.0.1", port, true, milliseconds(5000));
  TcpStore attempt0("127.0.0.1", port, false, milliseconds(5000), "/worker/attempt_0");
  TcpStore attempt1("127.0.0.1", port, false, milliseconds(300), "/worker/attempt_1");
  attempt0.set("nccl_unique_id", bytes("old"));
  EXPECT_FALSE(attempt1.check({"nccl_unique_id"}));
  const std::string msg = error_of([&] { attempt1.get("nccl_unique_id"); });
  EXPECT_NE(msg.find("'//worker/attempt_1/nccl_unique_id'"), std::string::npos) << msg;  // c10d's "/" first
  EXPECT_EQ(text(server.get("/worker/attempt_0/nccl_unique_id")), "old");
}

// A listening socket that is not a store: one that answers something else, one that answers nothing.
TEST(TcpStore, APeerThatIsNotAStoreIsRefused) {
  for (const bool answers : {true, false}) {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(::listen(listener, 4), 0);
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
    std::thread peer([&] {
      const int fd = ::accept(listener, nullptr, nullptr);
      if (answers) {
        const char reply[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
        (void)::send(fd, reply, sizeof(reply) - 1, MSG_NOSIGNAL);
      }
      std::this_thread::sleep_for(milliseconds(700));
      ::close(fd);
    });
    const std::string msg =
        error_of([&] { TcpStore("127.0.0.1", ntohs(addr.sin_port), false, milliseconds(500)); });
    peer.join();
    ::close(listener);
    EXPECT_NE(msg.find("not as a c10d TCPStore"), std::string::npos) << msg;
    EXPECT_NE(msg.find(answers ? "answered" : "did not answer"), std::string::npos) << msg;
  }
}

// The protocol is the contract: PyTorch's TCPStore server (what torchrun's agent runs) with our client under
// the worker prefix, and PyTorch's client against our server.
TEST(TcpStore, PyTorchsStoreAndOursUnderstandEachOther) {
  SKIP_WITHOUT_PYTHON_MODULES("torch", "torch.distributed");
  const testing::PyTorchTools& torch = testing::pytorch_tools();
  {  // PyTorch serves, we are a client.
    const int port = find_free_port();
    const std::string script = fmt::format(
        "import datetime, torch.distributed as d\n"
        "s = d.TCPStore('127.0.0.1', {}, is_master=True, wait_for_workers=False, "
        "timeout=datetime.timedelta(seconds=20))\n"
        "p = d.PrefixStore('/worker/attempt_2', s)\n"
        "p.set('from_py', b'hello')\n"
        "print('got', p.get('from_cpp').decode(), p.add('count', 1), flush=True)\n",
        port);
    FILE* py = ::popen((torch.python + " -c \"" + script + "\" 2>&1").c_str(), "r");
    ASSERT_NE(py, nullptr);
    std::string out;
    try {
      TcpStore ours("127.0.0.1", port, false, milliseconds(20000), "/worker/attempt_2");
      EXPECT_EQ(text(ours.get("from_py")), "hello");
      EXPECT_EQ(ours.add("count", 41), 41);
      ours.set("from_cpp", bytes("world"));
    } catch (const engine::Error& e) {
      ADD_FAILURE() << e.what();
    }
    char buffer[512];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, py)) > 0;) out.append(buffer, n);
    EXPECT_EQ(::pclose(py), 0) << out;
    EXPECT_NE(out.find("got world 42"), std::string::npos) << "torch " << torch.version << ": " << out;
  }
  {  // We serve, PyTorch is a client.
    const int port = find_free_port();
    TcpStore ours("127.0.0.1", port, /*is_server=*/true, milliseconds(20000));
    ours.set("from_cpp", bytes("hi"));
    const std::string script = fmt::format(
        "import datetime, torch.distributed as d\n"
        "c = d.TCPStore('127.0.0.1', {}, is_master=False, timeout=datetime.timedelta(seconds=20))\n"
        "c.set('from_py', b'there')\n"
        "print('got', c.get('from_cpp').decode(), c.add('n', 3), c.check(['from_cpp']), flush=True)\n",
        port);
    const std::string out = testing::command_output(torch.python + " -c \"" + script + "\" 2>&1 || true");
    EXPECT_NE(out.find("got hi 3 True"), std::string::npos) << "torch " << torch.version << ": " << out;
    EXPECT_EQ(text(ours.get("from_py")), "there");
    EXPECT_EQ(ours.add("n", 1), 4);
  }
}

}  // namespace
}  // namespace engine::dist
