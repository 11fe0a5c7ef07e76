#pragma once
// Preemption: SIGTERM (Slurm's preemption and torchrun's stop), SIGINT (Ctrl-C) and SIGUSR1 (`sbatch
// --signal=USR1@60`) ask cnn_train to stop cleanly: the handler only records the request; the Trainer
// finishes the step in progress, the ranks agree on the step to stop at, rank 0 writes a checkpoint that
// `--resume auto` continues from (mid-epoch, with the sampler's position), and the program exits with
// 128 + the signal's number. A second signal ends the process at once (the same status); a repeat within a
// second of the first counts as the same one (Slurm and torchrun may both deliver one preemption).

#include <string>

namespace engine::apps {

// Blocks SIGTERM, SIGINT and SIGUSR1 in the calling thread. cnn_train's ranks call it first thing, before any
// thread starts: every thread started later (gloo's, the loader's, OpenMP's) inherits the mask, and
// install_stop_handlers() then takes the signals on a thread of its own (sigwait), so a stop signal never
// interrupts another thread's system call (an EINTR in the middle of a collective's transfer). Not in the
// launcher, whose forwarding handler must run.
void route_stop_signals_to_one_thread();

// Installs the handlers (idempotent). Each first signal prints one line to stderr saying what happens next.
// After route_stop_signals_to_one_thread(), a thread waiting for them delivers them; the handlers stay for a
// thread that does not block them.
void install_stop_handlers();

// True once one of the signals arrived.
bool stop_requested();

// The first signal's number (0 when none) and its name ("SIGTERM").
int stop_signal();
std::string stop_signal_name();

// For tests: as if `signal` had arrived (no handler runs, nothing is printed).
void request_stop_for_testing(int signal);

}  // namespace engine::apps
