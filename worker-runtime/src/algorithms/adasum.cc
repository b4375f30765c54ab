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
  Adasum(OpContext& ctx, std::byte* data, std::byte* scratch)
      : ctx_(ctx), backend_(ctx.backend), dtype_(ctx.response.dtype), elem_(element_size(dtype_)),
        data_(data), scratch_(scratch) {
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
      // Each subtree of 2 * level ranks owns 3 slots per tensor; the others send zeros there.
      const size_t per_group = 3 * ctx_.response.sizes.size();
      std::vector<double> sums(static_cast<size_t>(p / (2 * level)) * per_group, 0.0);
      double* slots = sums.data() + static_cast<size_t>(rank / (2 * level)) * per_group;
      add_partial_sums(keep, left, slots);
      KOROVOD_RETURN_IF_ERROR(
          backend_.allreduce(sums.data(), sums.data(), static_cast<int64_t>(sums.size()), DataType::kFloat64, ReduceOp::kSum));
      combine(keep, left, slots);
      parents.push_back(mine);
      mine = keep;
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
  std::vector<int64_t> offsets_;  // tensor i: elements [offsets_[i], offsets_[i + 1]) of the vector
};

}  // namespace

Status run_adasum(OpContext& ctx) {
  const Response& r = ctx.response;
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
    KOROVOD_RETURN_IF_ERROR(Adasum(ctx, data, scratch).run());
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
