// SPDX-License-Identifier: BSD-3-Clause
// JSON views of spmma objects shared by the CLI commands.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bench_gpu.hpp"
#include "provenance.hpp"
#include "spmma/isa.hpp"
#include "spmma/matrix.hpp"

namespace spmma::cli {

// A registry row: id, ptx, target, verified, shape, types, registers, layouts.
nlohmann::json variant_json(const isa::Variant& v);
// Decoded values as nested lists (rows); non-finite values as the strings "inf", "-inf", "nan".
nlohmann::json values_json(const Matrix& m);
// Raw bit patterns as nested lists of unsigned integers.
nlohmann::json bits_json(const Matrix& m);

// One measured case as `spmma bench --json` prints it (docs/benchmarks.md), less what only bench
// has (its cuSPARSELt record, the provenance it adds): m, n, k, type, backend, device, verified,
// max_error, spmma_ms, spmma_call_us, spmma_host_us, spmma_tflops, cublas_tflops,
// cusparselt_tflops, cpu_dense_tflops (null where not measured), kernel, note, d_type, epilogue,
// d_order, fast_accum, timing_ms {spmma, cublas on the GPU or cpu_dense on the CPU: {min, median,
// p90}}, l2, l2_rotation, weight_bytes, value_bytes, metadata_bytes, weight_gbps,
// dense_weight_bytes, dense_weight_gbps, sequence {spmma_ms, cublas_ms, cusparselt_ms, calls,
// dense_calls} (cold rows: a call's time layer after layer; null elsewhere). `spmma demo --json` prints it for its one case; one schema for the two commands.
inline nlohmann::json bench_row_json(const bench::Row& r, const std::string& device, bool gpu, bool fast_accum) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  auto timing = [](const bench::Timing& t) {
    return nlohmann::json{{"min", t.min}, {"median", t.median}, {"p90", t.p90}};
  };
  return {{"m", r.m},
          {"n", r.n},
          {"k", r.k},
          {"type", r.type},
          {"backend", r.backend},
          {"device", device},
          {"verified", r.verified},
          {"max_error", r.max_error},
          {"spmma_ms", r.spmma_ms},
          {"spmma_call_us", r.spmma_call_us},
          {"spmma_host_us", r.spmma_host_us},
          {"spmma_tflops", r.spmma_tflops},
          {"cublas_tflops", opt(r.cublas_tflops)},
          {"cusparselt_tflops", opt(r.cusparselt_tflops)},
          {"cpu_dense_tflops", opt(r.cpu_dense_tflops)},
          {"kernel", r.kernel},
          {"note", r.note},
          {"d_type", r.d_type},
          {"epilogue", r.epilogue},
          {"d_order", r.d_order},
          {"fast_accum", fast_accum},
          {"timing_ms", {{"spmma", timing(r.spmma_timing)}, {gpu ? "cublas" : "cpu_dense", timing(r.dense_timing)}}},
          // The L2 mode and the weight stream (docs/benchmarks.md, "Cold L2 and the decode sweep").
          {"l2", r.l2},
          {"l2_rotation",
           {{"copies", r.l2_copies},
            {"between_bytes", r.l2_between_bytes},
            {"dense_copies", r.dense_l2_copies},
            {"dense_between_bytes", r.dense_l2_between_bytes},
            {"l2_bytes", r.l2_bytes}}},
          {"weight_bytes", r.value_bytes + r.metadata_bytes},
          {"value_bytes", r.value_bytes},
          {"metadata_bytes", r.metadata_bytes},
          {"weight_gbps", r.spmma_ms > 0 ? nlohmann::json(r.weight_gbps) : nlohmann::json(nullptr)},
          {"dense_weight_bytes", r.dense_weight_bytes},
          {"dense_weight_gbps", opt(r.dense_weight_gbps)},
          // Layer after layer (cold rows; bench_gpu.cu, sequence_timing): a call's time with the
          // calls back to back on the rotation's copies.
          {"sequence", r.spmma_seq_ms || r.cublas_seq_ms
                           ? nlohmann::json{{"spmma_ms", opt(r.spmma_seq_ms)},
                                            {"cublas_ms", opt(r.cublas_seq_ms)},
                                            {"cusparselt_ms", opt(r.cusparselt_seq_ms)},
                                            {"calls", r.seq_calls},
                                            {"dense_calls", r.dense_seq_calls}}
                           : nlohmann::json(nullptr)}};
}

// The provenance of a timed record (bench's rows, demo's one): the environment, the device, the
// command line, the UTC date, repetitions, warm-up, seed and what the timer measured.
inline nlohmann::json timed_provenance(const std::string& device, const bench::Options& bo, bool gpu) {
  nlohmann::json p = environment();
  p["device"] = device;
  p["command"] = command_line();
  p["date_utc"] = utc_now();
  p["reps"] = bo.reps;
  p["warmup"] = bo.warmup;
  p["seed"] = bo.seed;
  p["timer"] = gpu ? "CUDA events around each call on a stream held first by a spinning kernel (the GPU's time "
                     "alone, not the host's enqueueing), median of reps after warm-up"
                   : "host clock around each call, median of reps after warm-up";
  return p;
}

}  // namespace spmma::cli
