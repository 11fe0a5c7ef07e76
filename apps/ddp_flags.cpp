#include "apps/ddp_flags.h"

#include "apps/cli/choice_option.h"
#include "apps/cli/number_range.h"

namespace engine::apps {

void add_ddp_flags(CLI::App& app, DdpConfig& d) {
  app.add_option(
         "--gpus", d.gpus,
         "distributed data parallel: one process (rank) per listed GPU id, e.g. 0,1 (a GPU may repeat "
         "only with --backend gloo)")
      // Given empty (--gpus "" or a variable that is unset), it would read as not given: a CPU run.
      ->check(CLI::Validator(
          [](const std::string& ids) {
            return ids.empty() ? std::string("is empty: list GPU ids, e.g. 0,1") : "";
          },
          "", "NONEMPTY"));
  app.add_option("--nproc", d.nproc,
                 "distributed data parallel: start this many ranks on this machine (with --cpu: CPU ranks "
                 "through gloo; else rank r on GPU r)")
      ->check(number_range(1, 1024));
  app.add_option("--nnodes", d.nnodes,
                 "machines in the job, each running cnn_train with the same flags and its own --node-rank")
      ->check(number_range(1, 4096));
  app.add_option("--node-rank", d.node_rank,
                 "this machine's number, 0 .. --nnodes - 1 (node 0 serves the store)")
      ->check(number_range(0, 4095));
  app.add_option("--master-addr", d.master_addr, "with --nnodes: node 0's address, as every node reaches it");
  app.add_option("--master-port", d.master_port,
                 "with --nnodes: the store's port on node 0, the same everywhere")
      ->check(number_range(1, 65535));
  add_choice_option(
      app, "--backend", d.backend, kBackendChoices,
      "collectives: nccl (GPU ranks), gloo (CPU ranks, or GPU ranks through host copies), or auto");
  app.add_option("--bucket-mb", d.bucket_mb,
                 "gradient bucket size in MB (the first bucket is 1 MB so communication starts early)")
      ->check(number_range(0.001, 1e6));
  add_choice_option(app, "--grad-compression", d.grad_compression, kGradCompressionChoices,
                    "gradients on the wire: none (float32) or bf16 (half the bytes, summed in bf16 steps)");
  app.add_flag("--sync-bn", d.sync_bn,
               "SyncBatchNorm: batch statistics over the batches of every rank (the same as one process "
               "with the concatenated batch)");
  app.add_option("--timeout", d.timeout_seconds,
                 "seconds a collective may wait for the other ranks before the run fails naming the rank")
      ->check(number_range(0.1, 1e7));
  app.add_flag("--log-all-ranks", d.log_all_ranks, "every rank prints its epoch lines (tagged [rank N])");
  app.add_option("--baseline-ips", d.baseline_ips,
                 "the images/s of the same run in one process (one GPU, or one CPU rank): a distributed run "
                 "then reports its speedup and scaling efficiency")
      ->check(number_range(0.0, 1e12));
}

}  // namespace engine::apps
