#include "core/timeline.h"

#include <fmt/format.h>

#include <cctype>

namespace korovod {
namespace {

std::string horovod_dtype_name(DataType dtype) {
  std::string name(dtype_name(dtype));
  for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "HOROVOD_" + name;
}

}  // namespace

std::string json_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

Timeline::~Timeline() { stop(); }

Status Timeline::start(const std::string& path, bool mark_cycles) {
  MutexLock lock(mu_);
  close_file();
  Result<std::unique_ptr<WritableFile>> file = env_.new_writable_file(path);
  if (!file.is_ok()) return Status::invalid_argument(fmt::format("timeline: {}", file.status().message()));
  file_ = std::move(file).value();
  mark_cycles_ = mark_cycles;
  start_time_ = env_.now();
  pid_of_.clear();
  pending_.clear();
  KOROVOD_RETURN_IF_ERROR(file_->append(fmt::format(
      "[\n{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": "
      "{{\"start_time_since_epoch_in_micros\": {}}}}}\n]",
      env_.wall_micros())));
  KOROVOD_RETURN_IF_ERROR(file_->flush());
  on_.store(true, std::memory_order_release);
  return Status::ok();
}

void Timeline::stop() {
  MutexLock lock(mu_);
  close_file();
}

void Timeline::close_file() {
  if (!file_) return;
  write_pending();
  file_.reset();
  on_.store(false, std::memory_order_release);
}

bool Timeline::active() const { return on_.load(std::memory_order_acquire); }

int64_t Timeline::ts() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(env_.now() - start_time_).count();
}

void Timeline::record(const std::string& name, char phase, const std::string& op_name,
                      const std::string& args) {
  auto [it, inserted] = pid_of_.emplace(name, static_cast<int>(pid_of_.size()) + 1);
  const int pid = it->second;
  if (inserted) {
    pending_.push_back(fmt::format(
        "{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {}, \"args\": {{\"name\": \"{}\"}}}}",
        pid, json_escape(name)));
    pending_.push_back(fmt::format(
        "{{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": {}, \"args\": {{\"sort_index\": {}}}}}",
        pid, pid));
  }
  std::string rec = fmt::format("{{\"ph\": \"{}\"", phase);
  if (phase != 'E') rec += fmt::format(", \"name\": \"{}\"", json_escape(op_name));
  rec += fmt::format(", \"ts\": {}, \"pid\": {}", ts(), pid);
  if (phase == 'X') rec += ", \"dur\": 0";
  if (!args.empty()) rec += ", \"args\": {" + args + "}";
  pending_.push_back(rec + "}");
}

void Timeline::negotiate_start(const std::string& name, RequestType type) {
  if (!active()) return;
  MutexLock lock(mu_);
  if (file_) record(name, 'B', "NEGOTIATE_" + std::string(request_type_name(type)));
}

void Timeline::negotiate_rank_ready(const std::string& name, int rank) {
  if (!active()) return;
  MutexLock lock(mu_);
  if (file_) record(name, 'X', std::to_string(rank));
}

void Timeline::negotiate_end(const std::string& name) {
  if (!active()) return;
  MutexLock lock(mu_);
  if (file_) record(name, 'E', "");
}

void Timeline::op_start(const std::string& name, ResponseType type) {
  if (!active()) return;
  MutexLock lock(mu_);
  if (file_) record(name, 'B', std::string(response_type_name(type)));
}

void Timeline::activity_start(const std::string& name, const std::string& activity) {
  if (!active()) return;
  MutexLock lock(mu_);
  if (file_) record(name, 'B', activity);
}

void Timeline::activity_end(const std::string& name) {
  if (!active()) return;
  MutexLock lock(mu_);
  if (file_) record(name, 'E', "");
}

void Timeline::op_end(const std::string& name, DataType dtype, const std::vector<int64_t>& shape) {
  if (!active()) return;
  MutexLock lock(mu_);
  if (!file_) return;
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  record(name, 'E', "",
         fmt::format("\"dtype\": \"{}\", \"shape\": \"[{}]\"", horovod_dtype_name(dtype), dims));
}

void Timeline::mark_cycle() {
  if (!active()) return;
  MutexLock lock(mu_);
  if (!file_ || !mark_cycles_) return;
  pending_.push_back(fmt::format("{{\"name\": \"CYCLE_START\", \"ph\": \"i\", \"ts\": {}, \"s\": \"g\"}}", ts()));
}

void Timeline::flush() {
  if (!active()) return;
  MutexLock lock(mu_);
  write_pending();
}

void Timeline::write_pending() {
  if (!file_ || pending_.empty()) return;
  std::string out;
  for (const auto& rec : pending_) out += ",\n" + rec;
  out += "\n]";
  pending_.clear();
  // Best effort, as Horovod's: a full disk does not fail the training; the records are dropped.
  if (file_->back_up(2).is_ok() && file_->append(out).is_ok()) (void)file_->flush();  // over "\n]"
}

}  // namespace korovod
