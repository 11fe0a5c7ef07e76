// The parts of dist/ that need no second process (label cpu): bucket assignment on the zoo models, the
// environment bootstrap, --gpus parsing, the start-up failures (unreachable MASTER_ADDR, port in use), and
// the Reducer's timeline over a gloo group of one.

#include <chrono>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "dist/bootstrap.h"
#include "dist/launcher.h"
#include "dist/reducer.h"
#include "dist/tcp_store.h"
#include "layers/models.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/common/error_of.h"
#include "tests/dist/dist_test_models.h"
#include "tests/dist/timeline_checks.h"

namespace engine::dist {
namespace {

using Vars = std::map<std::string, std::string>;

DistEnv parse(const Vars& vars) {
  return read_dist_env([&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

using engine::testing::error_of;

TEST(DistBuckets, ZooModelsAreTiledInReverseOrderWithASmallFirstBucket) {
  for (const std::string& name : layers::model_names()) {
    const bool mnist = name == "mnist_cnn";
    layers::Model m = layers::build_model(name, mnist ? 1 : 3, 10, mnist ? 28 : 32, mnist ? 28 : 32);
    m.finalize(layers::ExecutionContext{}, 1);
    const std::size_t mb = 1024 * 1024;
    const std::vector<Bucket> buckets = assign_buckets(m, 1 * mb, 25 * mb);
    ASSERT_FALSE(buckets.empty()) << name;
    // Reverse parameter order, every parameter once.
    std::size_t expected = m.parameters().size();
    for (const Bucket& b : buckets)
      for (std::size_t p : b.params) EXPECT_EQ(p, --expected) << name;
    EXPECT_EQ(expected, 0u) << name;
    // Slices tile the flat buffer from its end to its start; each holds its parameters.
    std::int64_t end = m.flat_gradients().numel();
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      const Bucket& b = buckets[i];
      EXPECT_EQ(b.offset + b.numel, end) << name << " bucket " << i;
      end = b.offset;
      for (std::size_t p : b.params) {
        EXPECT_GE(m.parameters()[p].offset, b.offset);
        EXPECT_LE(m.parameters()[p].offset + m.parameters()[p].value.numel(), b.offset + b.numel);
      }
      const auto bytes = static_cast<std::size_t>(b.numel) * 4;
      const std::size_t cap = i == 0 ? 1 * mb : 25 * mb;
      // Over the cap only as a single parameter larger than the cap.
      if (bytes > cap) {
        EXPECT_EQ(b.params.size(), 1u) << name << " bucket " << i << " " << bytes << " bytes";
      }
      // Full: the next parameter would not have fitted.
      if (i + 1 < buckets.size()) {
        const std::size_t next = buckets[i + 1].params.front();
        const auto with_next = static_cast<std::size_t>(b.offset + b.numel - m.parameters()[next].offset) * 4;
        EXPECT_GT(with_next, cap) << name << " bucket " << i;
      }
    }
    EXPECT_EQ(end, 0) << name;
    EXPECT_LE(static_cast<std::size_t>(buckets[0].numel) * 4, 1 * mb) << name << ": first bucket";
  }
}

TEST(DistBuckets, ResNet18HasSeveralBuckets) {
  layers::Model m = layers::build_model("resnet18", 3, 10, 32, 32);
  m.finalize(layers::ExecutionContext{}, 1);
  const std::vector<Bucket> b = assign_buckets(m, 1024 * 1024, 25 * 1024 * 1024);
  // 44.7 MB of float32 gradients: a 1 MB first bucket, then 25 MB buckets.
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].params.front(), m.parameters().size() - 1);  // the classifier's bias first
}

TEST(DistBootstrap, ReadsEveryLauncherFamily) {
  DistEnv e = parse({{"RANK", "1"},
                     {"WORLD_SIZE", "4"},
                     {"LOCAL_RANK", "1"},
                     {"MASTER_ADDR", "10.0.0.2"},
                     {"MASTER_PORT", "1234"}});
  EXPECT_EQ(e.source, "torchrun");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.master_addr, "10.0.0.2");
  EXPECT_EQ(e.master_port, 1234);
  e = parse({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"ENGINE_LAUNCHER", "1"}, {"ENGINE_GPU", "3"}});
  EXPECT_EQ(e.source, "launcher");
  EXPECT_EQ(e.gpu, 3);
  e = parse(
      {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}});
  EXPECT_EQ(e.source, "openmpi");
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  EXPECT_EQ(e.master_port, 29500);
  e = parse({{"SLURM_PROCID", "5"},
             {"SLURM_NTASKS", "8"},
             {"SLURM_LOCALID", "1"},
             {"SLURM_NNODES", "2"},
             {"MASTER_ADDR", "node1"}});
  EXPECT_EQ(e.source, "slurm");
  EXPECT_EQ(e.local_rank, 1);
  // torchrun inside a Slurm allocation: torchrun's variables win.
  e = parse({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(e.source, "torchrun");
  EXPECT_EQ(parse({}).source, "none");
}

// srun sets no MASTER_ADDR: every task takes the first host of the step's node list (Slurm's compressed
// form expanded) and a port from the job id, so all agree without talking.
TEST(DistBootstrap, SlurmDerivesTheStoreAddressFromTheNodeListAndThePortFromTheJobId) {
  EXPECT_EQ(first_slurm_host("node[01-04,07]", "L"), "node01");
  EXPECT_EQ(first_slurm_host("gpu7,gpu[1-3]", "L"), "gpu7");
  EXPECT_EQ(first_slurm_host("rack[2-3]-n[08,11]", "L"), "rack2-n08");
  EXPECT_EQ(first_slurm_host("a[5]", "L"), "a5");
  EXPECT_EQ(first_slurm_host("host.example.org", "L"), "host.example.org");
  EXPECT_NE(
      error_of([] { first_slurm_host("node[01-04", "SLURM_NODELIST"); }).find("SLURM_NODELIST='node[01-04'"),
      std::string::npos);
  EXPECT_NE(error_of([] { first_slurm_host("node[a-b]", "L"); }).find("[a-b]"), std::string::npos);
  EXPECT_NE(error_of([] { first_slurm_host("", "L"); }).find("names no host"), std::string::npos);
  EXPECT_EQ(slurm_job_port("7"), 15007);
  EXPECT_EQ(slurm_job_port("123456"), 18456);
  EXPECT_NE(error_of([] { slurm_job_port("12x"); }).find("SLURM_JOB_ID='12x'"), std::string::npos);

  const Vars two_nodes = {{"SLURM_PROCID", "3"},
                          {"SLURM_NTASKS", "4"},
                          {"SLURM_LOCALID", "1"},
                          {"SLURM_NNODES", "2"},
                          {"SLURM_JOB_ID", "4242"},
                          {"SLURM_JOB_NODELIST", "node[01-02]"},
                          {"SLURM_STEP_NODELIST", "node[05,09]"}};
  DistEnv e = parse(two_nodes);
  EXPECT_EQ(e.master_addr, "node05");  // the step's list first: a step may run on part of the job's nodes
  EXPECT_EQ(e.master_from, "SLURM_STEP_NODELIST");
  EXPECT_EQ(e.master_port, 19242);
  Vars job_only = two_nodes;
  job_only.erase("SLURM_STEP_NODELIST");
  EXPECT_EQ(parse(job_only).master_addr, "node01");
  Vars exported = two_nodes;  // what the user exports wins
  exported["MASTER_ADDR"] = "10.1.1.1";
  exported["MASTER_PORT"] = "23456";
  e = parse(exported);
  EXPECT_EQ(e.master_addr, "10.1.1.1");
  EXPECT_EQ(e.master_port, 23456);
  EXPECT_FALSE(e.agent_store);
}

// torchrun tells its workers that its agent serves the store; PyTorch compares with str(True).
TEST(DistBootstrap, TorchrunsAgentStoreIsJoinedUnderTheAttemptsPrefix) {
  Vars vars = {{"RANK", "1"},
               {"WORLD_SIZE", "2"},
               {"MASTER_ADDR", "h0"},
               {"MASTER_PORT", "29400"},
               {"TORCHELASTIC_USE_AGENT_STORE", "True"},
               {"TORCHELASTIC_RESTART_COUNT", "3"}};
  DistEnv e = parse(vars);
  EXPECT_TRUE(e.agent_store);
  EXPECT_EQ(e.restart_count, 3);
  EXPECT_EQ(e.store_prefix, "/worker/attempt_3");
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  e = parse(vars);
  EXPECT_FALSE(e.agent_store);
  EXPECT_EQ(e.store_prefix, "");
  vars.erase("TORCHELASTIC_USE_AGENT_STORE");
  EXPECT_FALSE(parse(vars).agent_store);
  vars["TORCHELASTIC_RESTART_COUNT"] = "x";
  EXPECT_NE(error_of([&] { parse(vars); }).find("TORCHELASTIC_RESTART_COUNT='x'"), std::string::npos);
}

// Under the agent store nobody but torchrun serves: rank 0 is a client too, so a port nobody serves is
// "could not reach" on rank 0 as well (not "in use", not served by rank 0 itself).
TEST(DistBootstrap, UnderTheAgentStoreRank0IsAClient) {
  DistEnv e;
  e.world_size = 2;
  e.master_port = find_free_port();
  e.agent_store = true;
  e.store_prefix = "/worker/attempt_0";
  const std::string msg =
      error_of([&] { init_process_group(e, Backend::Gloo, std::chrono::milliseconds(800)); });
  EXPECT_NE(msg.find("could not reach"), std::string::npos) << msg;
}

TEST(DistBootstrap, BadValuesNameTheVariable) {
  EXPECT_NE(error_of([] {
              parse({{"RANK", "x"}, {"WORLD_SIZE", "2"}});
            }).find("RANK='x'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse({{"RANK", "2"}, {"WORLD_SIZE", "2"}}); }).find("RANK=2"), std::string::npos);
  EXPECT_NE(error_of([] { parse({{"RANK", "0"}}); }).find("WORLD_SIZE"), std::string::npos);
  EXPECT_NE(error_of([] {
              parse({{"RANK", "0"}, {"WORLD_SIZE", "0"}});
            }).find("WORLD_SIZE=0"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-1"}});
            }).find("LOCAL_RANK"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}});
            }).find("MASTER_PORT=70000"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_NNODES", "2"}});
            }).find("MASTER_ADDR"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
            }).find("OMPI_COMM_WORLD_RANK=3"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_backend("mpi"); }).find("'mpi'"), std::string::npos);
}

TEST(DistLauncher, WorkersShareTheCoresEvenly) {
  EXPECT_EQ(threads_per_worker(2, 16), 8);
  EXPECT_EQ(threads_per_worker(3, 16), 5);
  EXPECT_EQ(threads_per_worker(4, 2), 1);  // never 0: OpenMP would take every core again
  EXPECT_EQ(threads_per_worker(1, 0), 1);  // hardware_concurrency() may answer 0
}

TEST(DistLauncher, GpuListsAreValidatedBeforeAnythingStarts) {
  EXPECT_EQ(parse_gpu_list("0,1", 2, false), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_gpu_list("0,0", 1, true), (std::vector<int>{0, 0}));
  EXPECT_NE(error_of([] { parse_gpu_list("0,2", 2, false); }).find("GPU 2 does not exist"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_gpu_list("1,1", 2, false); }).find("listed twice"), std::string::npos);
  EXPECT_NE(error_of([] { parse_gpu_list("", 2, false); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([] { parse_gpu_list("0,,1", 2, false); }).find("'0,,1'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_gpu_list("a", 2, false); }).find("'a'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_gpu_list("0", 0, false); }).find("0 GPU(s) visible"), std::string::npos);
}

TEST(DistBootstrap, UnreachableMasterAddrFailsWithinTheTimeout) {
  DistEnv e;
  e.rank = 1;
  e.world_size = 2;
  e.master_addr = "10.255.255.1";
  e.master_port = 29500;
  const auto start = std::chrono::steady_clock::now();
  const std::string msg =
      error_of([&] { init_process_group(e, Backend::Gloo, std::chrono::milliseconds(1500)); });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(s, 5.0);
  // Unroutable: the connection times out ("could not reach"); behind a proxy that accepts any connection,
  // nobody answers ("no answer"). Either way the message names the address and MASTER_ADDR.
  EXPECT_NE(msg.find("10.255.255.1:29500"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MASTER_ADDR"), std::string::npos) << msg;
}

TEST(DistBootstrap, ClosedPortFailsWithinTheTimeout) {
  DistEnv e;
  e.rank = 1;
  e.world_size = 2;
  e.master_port = find_free_port();  // nobody listens there
  const std::string msg =
      error_of([&] { init_process_group(e, Backend::Gloo, std::chrono::milliseconds(1000)); });
  EXPECT_NE(msg.find("could not reach"), std::string::npos) << msg;
  EXPECT_NE(msg.find("refused"), std::string::npos) << msg;
}

TEST(DistBootstrap, PortInUseIsReportedByRank0) {
  DistEnv e;
  e.world_size = 2;
  e.master_port = find_free_port();
  TcpStore taken("127.0.0.1", e.master_port, /*is_server=*/true, std::chrono::milliseconds(1000));
  const std::string msg =
      error_of([&] { init_process_group(e, Backend::Gloo, std::chrono::milliseconds(1000)); });
  EXPECT_NE(msg.find("in use"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(e.master_port)), std::string::npos) << msg;
}

TEST(DistBootstrap, AMissingRankTimesOut) {
  DistEnv e;
  e.world_size = 2;  // rank 1 never comes
  e.master_port = find_free_port();
  const auto start = std::chrono::steady_clock::now();
  const std::string msg =
      error_of([&] { init_process_group(e, Backend::Gloo, std::chrono::milliseconds(1000)); });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_NE(msg.find("rank 0 of 2"), std::string::npos) << msg;
}

TEST(DistProcessGroup, WorldSizeOneCollectivesAreIdentities) {
  DistEnv e;
  e.master_port = find_free_port();
  auto pg = init_process_group(e, Backend::Gloo, std::chrono::milliseconds(5000));
  Tensor t = Tensor::from_vector(std::vector<float>{1.f, 2.f}, {2});
  pg->all_reduce(t, ReduceOp::Avg);
  pg->broadcast(t, 0);
  Tensor out = Tensor::empty({2}, DType::F32);
  pg->all_gather(t, out);
  pg->barrier();
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{1.f, 2.f}));
}

TEST(DistReducer, TimelineOrdersEveryBucketsEventsAndKeepsTheLastSyncedStep) {
  DistEnv e;
  e.master_port = find_free_port();
  auto pg = init_process_group(e, Backend::Gloo, std::chrono::milliseconds(5000));
  layers::Model model = testing::build_test_model("plain", pg.get());
  {
    Reducer off(*pg, model);  // the timeline is opt-in
    EXPECT_NE(error_of([&] { off.mark_step_start(); }).find("record_timeline"), std::string::npos);
  }
  ReducerOptions ro;  // float64 "plain" in several buckets, the linear bias alone in the first
  ro.first_bucket_mb = 0.1 / 1024.0;
  ro.bucket_mb = 1.0 / 1024.0;
  ro.record_timeline = true;
  Reducer reducer(*pg, model, ro);
  const std::size_t n = reducer.buckets().size();
  ASSERT_GE(n, 3u);
  EXPECT_TRUE(reducer.timeline().buckets.empty());
  layers::SoftmaxCrossEntropy loss;
  auto backward = [&](std::uint64_t seed) {
    loss.forward(model.context(), model.forward(testing::make_inputs(0, 4, seed), layers::Mode::Train),
                 testing::make_labels(0, 4, seed));
    model.backward(loss.backward());
    reducer.finish();
  };

  reducer.mark_step_start();
  backward(1);
  const StepTimeline first = reducer.timeline();
  testing::expect_ordered_timeline(first, n, model.flat_gradients().nbytes());

  reducer.set_sync(false);  // a micro-batch communicates nothing and keeps the last synced timeline
  backward(2);
  EXPECT_EQ(reducer.timeline().backward_end_ms, first.backward_end_ms);
  reducer.set_sync(true);  // unmarked: measured from the backward's first gradient
  backward(3);
  const StepTimeline& unmarked = reducer.timeline();
  ASSERT_EQ(unmarked.buckets.size(), n);
  EXPECT_GE(unmarked.buckets.front().ready_ms, 0.0);
  EXPECT_LE(unmarked.buckets.back().ready_ms, unmarked.backward_end_ms);
}

}  // namespace
}  // namespace engine::dist
