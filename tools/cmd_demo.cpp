#include "commands.hpp"

namespace spmma::cli {
void register_demo(CLI::App& app) { (void)app; }  // placeholder, being written
}  // namespace spmma::cli
