// Allreduce with op Adasum (Maleki et al., "Scaling Distributed Training with Adaptive
// Summation", 2021), as Horovod's CPU path computes it: ranks combine pairwise in a binary tree,
// rank r with r ^ 1, then those pairs with r ^ 2, ..., and two vectors a, b combine as
//   (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
// (a coefficient stays 1 when its vector's squared norm is below sqrt(DBL_MIN)), separately for
// each tensor of a fused response. Orthogonal gradients add; parallel ones average.
//
// The tree runs as Horovod's vector-halving, distance-doubling (VHDD): at each level a rank
// keeps half of its range and swaps the other half with its partner, so every rank moves about
// twice the vector once, as a ring allreduce does. The dot products and norms of a level are
// over whole tensors, so the ranks of a subtree add their partial sums: one small Sum allreduce
// per level, in which each subtree writes its own slots. Pairwise swaps are alltoallv calls
// with one non-empty peer, so every data plane runs Adasum without a point-to-point call.
//
// The process set's size is a power of 2 (negotiation refuses others, as Horovod does): any other
// tree is unbalanced, and parallel vectors would no longer average but weigh some ranks more.
//
// GPU tensors reduce as Horovod's NCCL build reduces them (AdasumGpuAllreduceOp): the ranks of
// each host are summed, and Adasum combines the hosts' sums. Here that is the same tree with its
// first log2(local_size) levels adding instead of combining (Horovod's start_level; its NCCL
// reduce-scatter is exactly those levels), run on the set's host data plane: the tensors are
// copied to host memory and back by the device backend, as Horovod copies them for its MPI part.
// Horovod's conditions hold: the global process set, the same number of ranks on every host,
// and each host's ranks consecutive (which is what pairs rank r with r ^ level on its own host
// at the summing levels and with its peer on the other hosts above).
#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

#include "algorithms/algorithm.h"
#include "kernels/kernels.h"

namespace korovod {
namespace {

struct Range {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

class Adasum {
 public:
  // plane: the data plane of the host memory `data` and `scratch` lie in. Levels below
  // `sum_levels` add the partner's vector instead of combining (GPU tensors: a host's ranks).
  Adasum(OpContext& ctx, Backend& plane, std::byte* data, std::byte* scratch, int64_t sum_levels = 1)
      : ctx_(ctx), backend_(plane), dtype_(ctx.response.dtype), elem_(element_size(dtype_)),
        data_(data), scratch_(scratch), sum_levels_(sum_levels) {
    offsets_.push_back(0);
    for (int64_t s : ctx.response.sizes) offsets_.push_back(offsets_.back() + s);
  }

  Status run() {
    const int rank = backend_.rank();
    const int64_t p = backend_.size();  // a power of 2
    Range mine{0, offsets_.back()};
    std::vector<Range> parents;
    for (int64_t level = 1; level < p; level *= 2) {
      const bool left = (rank & level) == 0;
      const int64_t mid = mine.begin + mine.size() / 2;
      const Range keep = left ? Range{mine.begin, mid} : Range{mid, mine.end};
      const Range give = left ? Range{mid, mine.end} : Range{mine.begin, mid};
      KOROVOD_RETURN_IF_ERROR(swap(static_cast<int>(rank ^ level), give, scratch_, keep.size()));
      parents.push_back(mine);
      mine = keep;
      if (level < sum_levels_) {
        kernels::scaled_add(dtype_, data_ + keep.begin * elem_, 1.0, scratch_, 1.0, keep.size());
        continue;
      }
      // Each subtree of 2 * level ranks owns 3 slots per tensor; the others send zeros there.
      const size_t per_group = 3 * ctx_.response.sizes.size();
      std::vector<double> sums(static_cast<size_t>(p / (2 * level)) * per_group, 0.0);
      double* slots = sums.data() + static_cast<size_t>(rank / (2 * level)) * per_group;
      add_partial_sums(keep, left, slots);
      KOROVOD_RETURN_IF_ERROR(
          backend_.allreduce(sums.data(), sums.data(), static_cast<int64_t>(sums.size()), DataType::kFloat64, ReduceOp::kSum));
      combine(keep, left, slots);
    }
    // Back up the tree: each pair swaps the halves it computed.
    for (int64_t level = p / 2; level >= 1; level /= 2) {
      const Range parent = parents.back();
      parents.pop_back();
      const bool left = (rank & level) == 0;
      const Range theirs = left ? Range{mine.end, parent.end} : Range{parent.begin, mine.begin};
      KOROVOD_RETURN_IF_ERROR(swap(static_cast<int>(rank ^ level), mine, data_ + theirs.begin * elem_, theirs.size()));
      mine = parent;
    }
    return Status::ok();
  }

 private:
  // Sends data_[give] to `peer` and receives `take` elements from it into `into`.
  Status swap(int peer, Range give, std::byte* into, int64_t take) {
    std::vector<int64_t> send(static_cast<size_t>(backend_.size()), 0), recv(send.size(), 0);
    send[static_cast<size_t>(peer)] = give.size() * elem_;
    recv[static_cast<size_t>(peer)] = take * elem_;
    return backend_.alltoallv(data_ + give.begin * elem_, send, into, recv);
  }

  // The part of tensor i inside `r`.
  Range part(size_t i, Range r) const {
    return Range{std::max(offsets_[i], r.begin), std::min(offsets_[i + 1], r.end)};
  }

  // Per tensor: the dot product of this rank's and its partner's data over `r`, and the squared
  // norms of the left (lower ranks') and right vectors.
  void add_partial_sums(Range r, bool left, double* slots) const {
    for (size_t i = 0; i + 1 < offsets_.size(); ++i) {
      const Range t = part(i, r);
      if (t.size() <= 0) continue;
      const kernels::DotNorms s = kernels::dot_and_norms(dtype_, data_ + t.begin * elem_,
                                                         scratch_ + (t.begin - r.begin) * elem_, t.size());
      slots[3 * i] += s.dot;
      slots[3 * i + 1] += left ? s.a_squared : s.b_squared;
      slots[3 * i + 2] += left ? s.b_squared : s.a_squared;
    }
  }

  void combine(Range r, bool left, const double* slots) {
    static const double kSmallest = std::sqrt(DBL_MIN);
    for (size_t i = 0; i + 1 < offsets_.size(); ++i) {
      const Range t = part(i, r);
      if (t.size() <= 0) continue;
      const double dot = slots[3 * i], left_sq = slots[3 * i + 1], right_sq = slots[3 * i + 2];
      const double left_coeff = left_sq >= kSmallest ? 1.0 - dot / left_sq * 0.5 : 1.0;
      const double right_coeff = right_sq >= kSmallest ? 1.0 - dot / right_sq * 0.5 : 1.0;
      kernels::scaled_add(dtype_, data_ + t.begin * elem_, left ? left_coeff : right_coeff,
                          scratch_ + (t.begin - r.begin) * elem_, left ? right_coeff : left_coeff, t.size());
    }
  }

  OpContext& ctx_;
  Backend& backend_;
  const DataType dtype_;
  const int64_t elem_;
  std::byte* const data_;
  std::byte* const scratch_;  // the partner's data for this rank's current range, from its start
  const int64_t sum_levels_;
  std::vector<int64_t> offsets_;  // tensor i: elements [offsets_[i], offsets_[i + 1]) of the vector
};

// Why this rank's set cannot reduce GPU tensors by Adasum; "" when it can. The same answer on every
// member: the layout's fields are the world's, but for `contiguous`, which `plane` agrees on.
Result<std::string> device_refusal(OpContext& ctx, Backend& plane) {
  const SetLayout& l = ctx.layout;
  if (!l.global) {
    return std::string("Adasum of GPU tensors runs in the global process set only, as Horovod's does; "
                       "reduce a CPU copy of the tensor to use Adasum in this process set.");
  }
  if (!l.homogeneous) {
    return std::string("Adasum of GPU tensors needs the same number of ranks on every host, as Horovod's "
                       "does (it sums each host's ranks, then combines the hosts); reduce a CPU copy of the tensor.");
  }
  double contiguous = l.contiguous ? 1.0 : 0.0;
  KOROVOD_RETURN_IF_ERROR(plane.allreduce(&contiguous, &contiguous, 1, DataType::kFloat64, ReduceOp::kMin));
  if (contiguous == 0.0) {
    return fmt::format("Adasum of GPU tensors needs each host's ranks to be consecutive (rank = host index * {} + "
                       "local rank), as Horovod's does: start the ranks by slot, not round-robin over hosts; or "
                       "reduce a CPU copy of the tensor.", l.local_size);
  }
  return std::string();
}

// GPU tensors: copied into host memory, reduced there on the set's host data plane, copied back.
Status run_adasum_on_device(OpContext& ctx) {
  const Response& r = ctx.response;
  if (!ctx.host) {
    return Status::precondition(fmt::format("Tensor '{}': Adasum of GPU tensors reduces in host memory, and this "
                                            "process set has no host data plane.", r.names[0]));
  }
  Backend& plane = *ctx.host;
  Result<std::string> refusal = device_refusal(ctx, plane);
  if (!refusal.is_ok()) return refusal.status();
  // As negotiation's refusals (a RuntimeError in Python, as Horovod's NotImplementedError).
  if (!refusal->empty()) return Status::precondition(fmt::format("Tensor '{}': {}", r.names[0], *refusal));
  const int64_t elem = element_size(r.dtype);
  const int64_t total = std::accumulate(r.sizes.begin(), r.sizes.end(), int64_t{0});
  if (total == 0) return Status::ok();
  std::byte* data = host_fusion_buffer(ctx, (total + total - total / 2) * elem);
  std::byte* scratch = data + total * elem;
  {
    ScopedActivity act(ctx, "MEMCPY_IN_HOST_BUFFER");
    int64_t offset = 0;
    for (size_t i = 0; i < ctx.entries.size(); ++i) {
      KOROVOD_RETURN_IF_ERROR(ctx.backend.copy(data + offset * elem, ctx.entries[i].input.data, r.sizes[i] * elem));
      offset += r.sizes[i];
    }
    kernels::scale(r.dtype, data, total, r.prescale);
  }
  {
    ScopedActivity act(ctx, fmt::format("{}_ADASUM_ALLREDUCE", plane.name()));
    KOROVOD_RETURN_IF_ERROR(Adasum(ctx, plane, data, scratch, ctx.layout.local_size).run());
  }
  kernels::scale(r.dtype, data, total, r.postscale);
  ScopedActivity act(ctx, "MEMCPY_OUT_HOST_BUFFER");
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.entries.size(); ++i) {
    KOROVOD_RETURN_IF_ERROR(ctx.backend.copy(ctx.entries[i].output.data, data + offset * elem, r.sizes[i] * elem));
    offset += r.sizes[i];
  }
  return Status::ok();
}

}  // namespace

Status run_adasum(OpContext& ctx) {
  const Response& r = ctx.response;
  if (r.device != kCpuDevice) return run_adasum_on_device(ctx);
  const int64_t elem = element_size(r.dtype);
  const int64_t total = std::accumulate(r.sizes.begin(), r.sizes.end(), int64_t{0});
  if (total == 0) return Status::ok();  // every rank negotiated the same empty tensors
  const int64_t scratch_elems = total - total / 2;  // the partner's half of this rank's range
  const bool single = ctx.entries.size() == 1;
  std::byte* buffer = fusion_buffer(ctx, ((single ? 0 : total) + scratch_elems) * elem);
  std::byte* data = single ? static_cast<std::byte*>(ctx.entries[0].output.data) : buffer;
  std::byte* scratch = single ? buffer : buffer + total * elem;
  {
    std::optional<ScopedActivity> copy_in;
    if (!single) copy_in.emplace(ctx, "MEMCPY_IN_FUSION_BUFFER");
    int64_t offset = 0;
    for (size_t i = 0; i < ctx.entries.size(); ++i) {
      kernels::scale_copy(r.dtype, data + offset * elem, ctx.entries[i].input.data, r.sizes[i], r.prescale);
      offset += r.sizes[i];
    }
  }
  {
    ScopedActivity act(ctx, fmt::format("{}_ADASUM_ALLREDUCE", ctx.backend.name()));
    KOROVOD_RETURN_IF_ERROR(Adasum(ctx, ctx.backend, data, scratch).run());
  }
  if (single) {
    kernels::scale(r.dtype, data, total, r.postscale);
    return Status::ok();
  }
  ScopedActivity act(ctx, "MEMCPY_OUT_FUSION_BUFFER");
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.entries.size(); ++i) {
    kernels::scale_copy(r.dtype, ctx.entries[i].output.data, data + offset * elem, r.sizes[i], r.postscale);
    offset += r.sizes[i];
  }
  return Status::ok();
}

}  // namespace korovod
