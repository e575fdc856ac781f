// SPDX-License-Identifier: BSD-3-Clause
// spmma — command-line front end. Each sub-command lives in tools/cmd_*.cpp and registers
// itself through tools/commands.hpp.
//
// Exit codes:
//   0  success (also --help and --version)
//   1  a command's negative answer (e.g. `spmma check` found a violation, `spmma bench` a row
//      that was not verified), signalled by throwing CLI::RuntimeError(1) after printing the
//      answer; or an unexpected exception
//   2  every error: an spmma::Error (bad file, bad type name, shape mismatch...), a command-line
//      parse error (CLI11's own, e.g. a missing argument), running out of memory, a failed write
//      to standard output. One line: "spmma: error: <message>"; with --json anywhere on the
//      command line also one JSON object on standard output, {"error": {"status": "...",
//      "exit_code": 2, "message": "..."}} (status: spmma::Status's name, "usage" for a
//      command-line error, "out_of_memory", "io_error" for standard output), so that a caller
//      reading JSON gets JSON whatever happened.
//   77 `spmma conform` without a GPU (CTest's "skipped"); with --json it prints the error object
//      itself, status "not_supported", exit_code 77 (cli_util.hpp's error_json, as here)
#include <ctime>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "commands.hpp"
#include "provenance.hpp"
#include "spmma/error.hpp"
#include "spmma/version.hpp"

namespace {

bool g_json = false;  // --json on the command line: errors as JSON on standard output too

// The documented one-line error: a message with line breaks (CLI11's, or text quoted from a
// file) is folded onto one line.
int error_line(const std::string& message, int code, const std::string& status = "error") {
  std::cout.flush();
  std::string one;
  for (char c : message) {
    if (c == '\n' || c == '\r') {
      if (!one.empty() && one.back() != ' ') one += ' ';
    } else {
      one += c;
    }
  }
  while (!one.empty() && one.back() == ' ') one.pop_back();
  std::cerr << "spmma: error: " << one << "\n";
  if (g_json) std::cout << spmma::cli::error_json(status, code, one).dump() << std::endl;
  return code;
}

// "check: " in front of a parse error of the sub-command `check`, with where to get help. A
// first argument that names no command gets CLI11's "A subcommand is required" otherwise.
std::string parse_error_text(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  std::string where, help = "spmma --help";
  for (const CLI::App* sub : app.get_subcommands()) {
    where = sub->get_name() + ": ";
    help = "spmma " + sub->get_name() + " --help";
  }
  if (where.empty() && argc > 1) {
    std::string commands;
    for (const CLI::App* sub : app.get_subcommands({})) commands += (commands.empty() ? "" : ", ") + sub->get_name();
    return std::string("'") + argv[1] + "' is not a command (commands: " + commands + "; see " + help + ")";
  }
  return where + e.what() + " (see " + help + ")";
}

}  // namespace

namespace spmma::cli {
namespace {
std::string& command_line_store() {
  static std::string s;
  return s;
}
}  // namespace

void set_command_line(int argc, char** argv) {
  std::string& s = command_line_store();
  s.clear();
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
}
const std::string& command_line() { return command_line_store(); }

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}
}  // namespace spmma::cli

int main(int argc, char** argv) {
  spmma::cli::set_command_line(argc, argv);
  for (int i = 1; i < argc; ++i) g_json = g_json || std::string(argv[i]) == "--json";
  CLI::App app{
      "spmma: a model of NVIDIA's sparse tensor-core MMA instructions (mma.sp, wgmma.sp).\n"
      "Prune, check, compress and decompress structured-sparse matrices (.npy, .safetensors),\n"
      "list the instruction variants, emulate them exactly on the CPU, and run the demo.",
      "spmma"};
  // "spmma 0.1.0 (commit 7ae090a1b2c3), CUDA 13.0, architectures 80-real 90a-real 89-virtual"
  app.set_version_flag("--version", [] {
    const spmma::BuildInfo b = spmma::build_info();
    return "spmma " + b.version + " (commit " + b.commit + "), " +
           (b.cuda ? "CUDA " + b.cuda_version + ", architectures " + b.architectures : std::string("built without CUDA"));
  });
  app.require_subcommand(1);
  app.fallthrough(false);

  spmma::cli::register_variants(app);
  spmma::cli::register_emulate(app);
  spmma::cli::register_formats(app);
  spmma::cli::register_ptx(app);
  spmma::cli::register_conform(app);
  spmma::cli::register_bench(app);
  spmma::cli::register_demo(app);
  spmma::cli::register_info(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version: printed to standard output, status 0
  } catch (const CLI::RuntimeError& e) {
    std::cout.flush();
    return e.get_exit_code();  // a command's answer, already printed (check: 1, conform: 77)
  } catch (const CLI::ParseError& e) {
    return error_line(parse_error_text(app, e, argc, argv), 2, "usage");
  } catch (const spmma::Error& e) {
    return error_line(e.what(), 2, std::string(spmma::status_name(e.code())));
  } catch (const std::bad_alloc&) {
    return error_line("out of memory: the request needs more memory than this machine can give; use smaller sizes", 2,
                      "out_of_memory");
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "spmma: unexpected error: " << e.what() << "\n";
    return 1;
  }
  // Output to a full disk or a closed pipe must not end in status 0.
  std::cout.flush();
  if (!std::cout) return error_line("standard output: write failed", 2, "io_error");
  return 0;
}
