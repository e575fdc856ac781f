// SPDX-License-Identifier: BSD-3-Clause
// `spmma conform`: the conformance suite on the local GPU.
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"
#include "commands.hpp"
#include "io/files.hpp"
#include "provenance.hpp"
#include "spmma/error.hpp"
#ifdef SPMMA_HAVE_CUDA
#include "spmma/conform.hpp"
#endif

namespace spmma::cli {

namespace {

#ifdef SPMMA_HAVE_CUDA
// The table's rows, as the run adds them (scripts/device-conform.sh greps the "finding:" and
// "N variants" lines that end it).
void print_header(const conform::Report& rep) {
  std::cout << rep.device << " (sm_" << rep.compute_capability << "), " << rep.date << "\n";
  std::cout << std::left << std::setw(100) << "variant" << std::right << std::setw(8) << "trials" << std::setw(12)
            << "mismatches" << std::setw(14) << "max error" << std::endl;
}

void print_row(const conform::Row& r) {
  std::cout << std::left << std::setw(100) << r.id << std::right;
  if (r.skipped) {
    std::cout << "  skipped: " << r.note << std::endl;
    return;
  }
  std::cout << std::setw(8) << r.trials << std::setw(12) << r.mismatches << std::setw(14) << std::setprecision(3)
            << r.max_error << (r.mismatches ? "   " + r.note : "") << std::endl;  // flushed: a pipe sees it now
}
#endif

}  // namespace

void register_conform(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "conform", "Run every registry variant the local GPU supports on random inputs and compare D with the emulator");
  cmd->footer(
      "Text: each variant's row is printed as it finishes; on a terminal a progress line on stderr\n"
      "names the variant running (-q/--quiet: none). --json: one object at the end, {\"device\",\n"
      "\"compute_capability\", \"date\", \"findings\", \"provenance\", \"rows\": [{\"id\", \"trials\",\n"
      "\"exact_trials\", \"mismatches\", \"max_error\", \"skipped\", \"note\", \"by_kind\"}], \"summary\":\n"
      "{\"variants\", \"with_mismatches\", \"trials\"}}. Exit 1 when a variant has mismatches; 77 where\n"
      "there is no GPU (with --json also {\"error\": {\"status\": \"not_supported\", \"exit_code\": 77,\n"
      "\"message\"}} on standard output).\n");
  struct Opts {
    bool json = false, quiet = false;
    std::string filter, verified_out, json_out;
    int trials = 8, wgmma_trials = 2;
    unsigned long long seed = 1;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_flag("--json", o->json, "Print the report as one JSON object (at the end) instead of the table");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress line on stderr (it is shown only where stderr is a terminal)");
  cmd->add_option("--filter", o->filter, "Only variants whose id contains this text");
  cmd->add_option("--trials", o->trials, "Trials per selector and input kind for warp-level forms (default 8)");
  cmd->add_option("--wgmma-trials", o->wgmma_trials, "Trials per selector and input kind for wgmma (default 2)");
  cmd->add_option("--seed", o->seed, "Seed of the random inputs (default 1)");
  cmd->add_option("--json-out", o->json_out, "Also write the JSON report to this file");
  cmd->add_option("--write-verified", o->verified_out,
                  "Write the ids of variants with zero mismatches here (src/isa/verified_ids.inc format)");
  cmd->callback([o] {
#ifndef SPMMA_HAVE_CUDA
    (void)o;
    fail(Status::not_supported, "spmma conform: this build has no CUDA support (nvcc was not found at build time)");
#else
    // Output paths are checked before the run: a typo must not cost the whole suite.
    require_distinct({}, {{"--json-out", o->json_out}, {"--write-verified", o->verified_out}});
    std::string why;
    if (!conform::gpu_available(&why)) {
      // 77: the exit code CTest reads as "skipped". Not an error line: nothing is wrong; but a
      // caller that asked for JSON still gets one JSON document saying why there is no report.
      const std::string message = "no GPU here, nothing to run (" + why + ")";
      std::cerr << "spmma conform: " << message << "\n";
      if (o->json) std::cout << error_json("not_supported", 77, "conform: " + message).dump() << std::endl;
      throw CLI::RuntimeError(77);
    }
    conform::Options opts;
    opts.filter = o->filter;
    opts.trials_per_selector = o->trials;
    opts.wgmma_trials_per_selector = o->wgmma_trials;
    opts.seed = o->seed;
    // The suite takes minutes: the table's header as soon as the device is known, each row as its
    // variant finishes, and (on a terminal) which variant is running.
    ProgressLine progress("conform", o->quiet);
    opts.on_begin = [&](const conform::Report& rep) {
      if (!o->json) print_header(rep);
    };
    opts.on_start = [&](size_t i, size_t total, const std::string& id) { progress.start(i, total, id); };
    opts.on_row = [&](const conform::Row& r) {
      progress.clear();
      if (!o->json) print_row(r);
    };
    const conform::Report rep = conform::run(opts);
    progress.clear();
    nlohmann::json j = {{"device", rep.device}, {"compute_capability", rep.compute_capability}, {"date", rep.date},
                        {"findings", rep.findings}};
    // What the report was made with (docs/conformance.md is generated from it, nothing by hand):
    // spmma's version and commit, the build, driver and runtime, the command, the UTC date, the
    // trials per selector and the seed.
    nlohmann::json provenance = environment();
    provenance["device"] = rep.device;
    provenance["command"] = command_line();
    provenance["date_utc"] = utc_now();
    provenance["trials_per_selector"] = o->trials;
    provenance["wgmma_trials_per_selector"] = o->wgmma_trials;
    provenance["seed"] = o->seed;
    if (!o->filter.empty()) provenance["filter"] = o->filter;
    j["provenance"] = provenance;
    nlohmann::json rows = nlohmann::json::array();
    int bad = 0, ran = 0, trials = 0;
    for (const auto& r : rep.rows) {
      nlohmann::json kinds = nlohmann::json::object();
      for (const auto& [k, tb] : r.by_kind) kinds[k] = {{"trials", tb.first}, {"mismatches", tb.second}};
      rows.push_back({{"id", r.id}, {"trials", r.trials}, {"exact_trials", r.exact_trials}, {"mismatches", r.mismatches},
                      {"max_error", r.max_error}, {"skipped", r.skipped}, {"note", r.note}, {"by_kind", kinds}});
      bad += r.mismatches > 0;
      ran += !r.skipped;
      trials += r.trials;
    }
    j["rows"] = rows;
    j["summary"] = {{"variants", ran}, {"with_mismatches", bad}, {"trials", trials}};
    {
      io::OutputFiles files;  // every write checked; none left half-written
      auto bytes = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
      if (!o->json_out.empty()) files.add(o->json_out, bytes(j.dump(1) + "\n"));
      if (!o->verified_out.empty()) {
        std::ostringstream f;
        f << "// generated by `spmma conform --write-verified` on " << rep.device << " (sm_" << rep.compute_capability
          << "), " << rep.date << "\n";
        for (const auto& r : rep.rows)
          if (!r.skipped && r.mismatches == 0 && r.trials > 0) f << "\"" << r.id << "\",\n";
        files.add(o->verified_out, bytes(f.str()));
      }
      files.commit();
    }
    if (o->json) {
      std::cout << j.dump(1) << "\n";
    } else {  // the rows are printed; what the whole run found
      for (const auto& f : rep.findings) std::cout << "finding: " << f << "\n";
      std::cout << ran << " variants, " << trials << " trials, " << bad << " with mismatches\n";
    }
    if (bad) throw CLI::RuntimeError(1);
#endif
  });
}

}  // namespace spmma::cli
