#pragma once
// Real hosts on one machine for the multi-host tests: network namespaces, each with its own network stack,
// address and host name. Two hosts are joined by one veth pair (a point-to-point link, which the tests can
// set down or rate-limit with tc's tbf); three or more by a switch: a namespace "ehost<pid>_sw" holding a
// bridge, each host's veth peer a port of it (nothing in this machine's own namespace is touched). Needs
// root (CI runs as root); elsewhere unavailable() says why not and the tests skip with that message.
//
//   host k      namespace "ehost<pid>_<k>", address 10.77.0.<k+1>/24 on interface "eh<pid>v<k>", host name
//               "node<k>" (each process runs in a UTS namespace of its own), and an /etc/hosts of its own
//               (ip netns exec mounts /etc/netns/<namespace>/hosts over /etc/hosts) in which every node<j>
//               resolves, as a cluster's DNS would make Slurm's node names resolve.
// Names carry this test process's id, so parallel test processes never share one; the same addresses in
// different processes do not clash (separate network stacks). The destructor kills whatever still runs in
// the namespaces and removes them, also when the test failed; namespaces left by a test process that was
// itself killed (a ctest timeout) are removed by the next one.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/types.h>
#include <unistd.h>
#include <vector>

#include "tests/common/environment.h"
#include "tests/common/pytorch_tools.h"  // command_output

namespace engine::testing {

class VirtualHosts {
 public:
  static constexpr int kHosts = 2;  // the tests' usual count

  // "" when `count` hosts can be made here, else why not (three or more need a bridge).
  static std::string unavailable(int count = kHosts) {
    if (::geteuid() != 0) return "the multi-host tests need root (network namespaces, veth links)";
    if (!on_path("ip") || !on_path("unshare"))
      return "the multi-host tests need iproute2's ip and util-linux's unshare (scripts/install-deps.sh)";
    const std::string probe = "ehostprobe" + std::to_string(::getpid());
    if (std::system(("ip netns add " + probe + " >/dev/null 2>&1").c_str()) != 0)
      return "cannot make a network namespace here (ip netns add failed: a container without CAP_SYS_ADMIN?)";
    const bool bridge =
        count < 3 ||
        std::system(("ip -n " + probe + " link add br0 type bridge >/dev/null 2>&1").c_str()) == 0;
    std::system(("ip netns del " + probe + " >/dev/null 2>&1").c_str());
    if (!bridge)
      return "cannot make a bridge for three hosts here (ip link add type bridge failed: no bridge module?)";
    return "";
  }

  explicit VirtualHosts(int count = kHosts)
      : prefix_("ehost" + std::to_string(::getpid()) + "_"), count_(count) {
    if (count < 2 || count > 200)
      throw std::invalid_argument("VirtualHosts: " + std::to_string(count) + " hosts");
    remove_stale();
    try {
      std::string names = "127.0.0.1 localhost\n";
      for (int k = 0; k < count; ++k) names += address(k) + " " + hostname(k) + "\n";
      for (int k = 0; k < count; ++k) {
        const std::filesystem::path etc = "/etc/netns/" + ns(k);
        std::filesystem::create_directories(etc);
        std::ofstream(etc / "hosts") << names;
        made_.push_back(ns(k));
        sh("ip netns add " + ns(k) + " && ip -n " + ns(k) + " link set lo up");
      }
      if (count == 2) {
        sh("ip link add " + link(0) + " type veth peer name " + link(1));
      } else {
        made_.push_back(switch_ns());
        sh("ip netns add " + switch_ns() + " && ip -n " + switch_ns() +
           " link add br0 type bridge && ip -n " + switch_ns() + " link set br0 up");
        for (int k = 0; k < count; ++k) {
          sh("ip link add " + link(k) + " type veth peer name " + port(k));
          sh("ip link set " + port(k) + " netns " + switch_ns());
          sh("ip -n " + switch_ns() + " link set " + port(k) + " master br0 up");
        }
      }
      for (int k = 0; k < count; ++k) {
        sh("ip link set " + link(k) + " netns " + ns(k));
        sh("ip -n " + ns(k) + " addr add " + address(k) + "/24 dev " + link(k));
        sh("ip -n " + ns(k) + " link set " + link(k) + " up");
      }
    } catch (...) {
      remove();  // no destructor runs after a constructor throws
      throw;
    }
  }

  ~VirtualHosts() { remove(); }
  VirtualHosts(const VirtualHosts&) = delete;
  VirtualHosts& operator=(const VirtualHosts&) = delete;

  int count() const { return count_; }
  std::string ns(int k) const { return prefix_ + std::to_string(k); }
  std::string link(int k) const { return "eh" + std::to_string(::getpid()) + "v" + std::to_string(k); }
  static std::string address(int k) { return "10.77.0." + std::to_string(k + 1); }
  static std::string hostname(int k) { return "node" + std::to_string(k); }

  // argv that runs `command` on host k, with `env` ("NAME=value") set, under the host's name.
  std::vector<std::string> on_host(int k, const std::vector<std::string>& env,
                                   const std::vector<std::string>& command) const {
    std::vector<std::string> argv = {"ip",  "netns",   "exec",
                                     ns(k), "unshare", "--uts",
                                     "sh",  "-c",      "hostname " + hostname(k) + " && exec env \"$@\"",
                                     "sh"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  }

  void set_link(int k, bool up) const {
    sh("ip -n " + ns(k) + " link set " + link(k) + (up ? " up" : " down"));
  }

  // Both ends of the link limited to `rate` (tc's units: "50mbit").
  void limit_rate(const std::string& rate) const {
    for (int k = 0; k < count_; ++k)
      sh("tc -n " + ns(k) + " qdisc replace dev " + link(k) + " root tbf rate " + rate +
         " burst 64kb latency 400ms");
  }

  // The processes running in host k's namespace.
  std::vector<pid_t> pids(int k) const {
    std::vector<pid_t> out;
    std::istringstream list(command_output("ip netns pids " + ns(k) + " 2>/dev/null"));
    for (pid_t p; list >> p;) out.push_back(p);
    return out;
  }

 private:
  // Kills what runs on the hosts, removes them (the veth pair goes with its namespaces) and their /etc files.
  void remove() {
    for (const std::string& name : made_) {
      std::istringstream list(command_output("ip netns pids " + name + " 2>/dev/null"));
      for (pid_t pid; list >> pid;) {
        ::kill(pid, SIGKILL);
        ::kill(pid, SIGCONT);
      }
      std::system(("ip netns del " + name + " >/dev/null 2>&1").c_str());
      std::error_code ec;
      std::filesystem::remove_all("/etc/netns/" + name, ec);
    }
    made_.clear();
    for (int k = 0; k < count_; ++k)  // the links that never left this namespace, if any
      std::system(("ip link del " + link(k) + " >/dev/null 2>&1").c_str());
  }

  std::string switch_ns() const { return prefix_ + "sw"; }
  // Host k's veth peer on the switch's bridge.
  std::string port(int k) const { return "eh" + std::to_string(::getpid()) + "p" + std::to_string(k); }

  static void sh(const std::string& command) {
    if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
  }

  // Namespaces of test processes that no longer run.
  static void remove_stale() {
    std::istringstream list(command_output("ip netns list 2>/dev/null"));
    for (std::string name, rest; list >> name && std::getline(list, rest);) {
      if (name.rfind("ehost", 0) != 0 || name.find('_') == std::string::npos) continue;
      const std::string pid = name.substr(5, name.find('_') - 5);
      if (pid.empty() || std::filesystem::exists("/proc/" + pid)) continue;
      std::system(("ip netns del " + name + " >/dev/null 2>&1").c_str());
      std::error_code ec;
      std::filesystem::remove_all("/etc/netns/" + name, ec);
    }
  }

  std::string prefix_;
  int count_;
  std::vector<std::string> made_;  // the namespaces made, to remove
};

}  // namespace engine::testing
