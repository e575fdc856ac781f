// spmma — command-line front end. Each sub-command lives in tools/cmd_*.cpp and registers
// itself through tools/commands.hpp.
//
// Exit codes:
//   0  success
//   1  a command's negative answer (e.g. `spmma check` found a violation), signalled by
//      throwing CLI::RuntimeError(1) after printing the answer; or an unexpected exception
//   2  an spmma::Error (bad file, bad type name, shape mismatch...): "spmma: error: <message>"
//   CLI11's own codes for command-line parse errors (it prints the message and a hint).
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "spmma/error.hpp"

#ifndef SPMMA_VERSION
#define SPMMA_VERSION "0.1.0"
#endif

int main(int argc, char** argv) {
  CLI::App app{
      "spmma: a model of NVIDIA's sparse tensor-core MMA instructions (mma.sp, wgmma.sp).\n"
      "Prune, check, compress and decompress structured-sparse matrices (.npy files),\n"
      "list the instruction variants, emulate them exactly on the CPU, and run the demo.",
      "spmma"};
  app.set_version_flag("--version", std::string("spmma ") + SPMMA_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  spmma::cli::register_variants(app);
  spmma::cli::register_emulate(app);
  spmma::cli::register_formats(app);
  spmma::cli::register_ptx(app);
  spmma::cli::register_conform(app);
  spmma::cli::register_bench(app);
  spmma::cli::register_demo(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const spmma::Error& e) {
    std::cout.flush();
    std::cerr << "spmma: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "spmma: unexpected error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
