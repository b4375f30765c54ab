// The shared-memory data plane of one process set whose members all share a host. Every
// collective is a sequence of rounds over the ranks' slot rings; a round number is the same on
// every rank (all ranks run the same collectives in the same order), so the counters in the
// control blocks name rounds and never need resetting.
//
// allreduce: up to kOneHopBytes, one hop (each rank copies its data into its slot, everyone
// reduces all slots in rank order: identical results); above, a pipelined reduce-scatter +
// allgather by chunk: each chunk is reduced exactly once by its owner rank and copied out by all,
// and copy-in of round t, reduction of round t-1 and copy-out of round t-2 overlap.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "korovod/transport.h"
#include "transport/shm/shm_group.h"
#include "transport/shm/store_chooser.h"

namespace korovod::shm {

class ShmBackend final : public Backend {
 public:
  // group null: the set spans hosts (or shared memory was unusable), so this backend declines
  // every tensor and the executor falls through to the next one (MPI).
  explicit ShmBackend(std::unique_ptr<Group> group);

  std::string name() const override { return "SHM"; }
  bool enabled(int device) const override { return group_ != nullptr && device == kCpuDevice; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op) override;
  // The tensors of a fused response go straight through the slots: no fusion-buffer copies.
  bool allreduce_many_offered() const override { return group_ != nullptr; }
  Status allreduce_many(const std::vector<const void*>& sends, const std::vector<void*>& recvs,
                        const std::vector<int64_t>& counts, DataType dtype, ReduceOp op, double postscale) override;
  Status allgatherv(const void* send, int64_t send_bytes, void* recv,
                    const std::vector<int64_t>& recv_bytes) override;
  Status broadcast(void* buffer, int64_t bytes, int root) override;
  Status alltoallv(const void* send, const std::vector<int64_t>& send_bytes, void* recv,
                   const std::vector<int64_t>& recv_bytes) override;
  Status reducescatter(const void* send, void* recv, const std::vector<int64_t>& recv_counts, DataType dtype,
                       ReduceOp op) override;
  Status barrier() override;
  size_t bits_allreduce_words() const override { return group_ ? kControlAreaBytes / 2 / sizeof(uint64_t) : 0; }
  Status allreduce_bits(std::vector<uint64_t>& bits, BitwiseOp op) override;
  // The idle doorbell (Group::sleep_idle); allreduce_bits rings the members asleep on theirs.
  bool offers_idle_wait() const override { return group_ != nullptr; }
  uint64_t idle_token() const override { return group_ ? group_->bell() : 0; }
  void idle_wait(uint64_t token, double timeout_seconds) override;
  void idle_wake() override {
    if (group_) group_->ring_own();
  }
  bool control_round_pending() const override { return group_ && group_->control_round_pending(); }
  bool interrupt_wait(const std::string& why) override { return group_ && group_->interrupt(why); }
  // The part of each slot a pipelined round uses: whole pages, at least one, at most the slot
  // (0 = the whole slot). Rounds advance the same way on every rank whatever the chunk, so the
  // only rule is the interface's: every member switches between the same two collectives.
  void set_chunk_bytes(int64_t bytes) override;
  int64_t chunk_bytes() const;

  // One hop below this many bytes (measured: two ranks, see docs/benchmarks.md).
  static constexpr int64_t kOneHopBytes = 32 * 1024;
  // Ring allreduces from this size on choose their slot stores by measurement (StoreChooser);
  // smaller ones are too short to time reliably and write plain stores.
  static constexpr int64_t kChooseStoresBytes = 256 * 1024;

 private:
  // The tensors one allreduce runs on, end to end: piece i is the elements up to ends[i], read
  // from sends[i] and written to recvs[i]. A plain allreduce is one piece.
  struct Layout {
    const void* const* sends;
    void* const* recvs;
    const int64_t* ends;
    size_t pieces;
    int64_t elem;
    int64_t count() const { return ends[pieces - 1]; }
    // fn(send, recv, at, n) for each piece of elements [off, off + len), `at` counted from off.
    template <typename Fn>
    void for_range(int64_t off, int64_t len, Fn fn) const {
      const int64_t stop = off + len;
      size_t i = static_cast<size_t>(std::upper_bound(ends, ends + pieces, off) - ends);
      for (int64_t pos = off; pos < stop && i < pieces; ++i) {
        const int64_t start = i == 0 ? 0 : ends[i - 1];
        const int64_t n = std::min(ends[i], stop) - pos;
        if (n <= 0) continue;
        fn(static_cast<const std::byte*>(sends[i]) + (pos - start) * elem,
           static_cast<std::byte*>(recvs[i]) + (pos - start) * elem, pos - off, n);
        pos += n;
      }
    }
  };
  Status allreduce_layout(const Layout& layout, DataType dtype, ReduceOp op, double postscale);
  Status one_hop_allreduce(const Layout& layout, DataType dtype, ReduceOp op, double postscale);
  Status ring_allreduce(const Layout& layout, DataType dtype, ReduceOp op, double postscale);
  // dst (and dst2 when not null) = scale * (srcs[0] op srcs[1] op ... in rank order); every
  // source is read before the block is written, so dst may alias a source. float16/bfloat16
  // accumulate in float32 and round once, then scale as kernels::scale does (same bits as
  // scaling the reduced output afterwards).
  // stream_dst2: dst2 (a slot peers read) written with streaming stores (the caller fences).
  void reduce_sources(DataType dtype, ReduceOp op, std::byte* dst, std::byte* dst2,
                      const std::vector<const std::byte*>& srcs, int64_t count, bool stream_dst = false,
                      bool stream_dst2 = false, double scale = 1.0);
  Status ring_rounds(const Layout& layout, DataType dtype, ReduceOp op, bool stream_slots, double postscale);
  Status usable() const;

  std::unique_ptr<Group> group_;
  int rank_ = 0;
  int size_ = 1;
  uint64_t round_ = 0;  // next round; advances identically on every rank
  uint64_t bits_round_ = 0;  // next allreduce_bits round (Counter::kControl)
  std::vector<const std::byte*> srcs_;  // per-call scratch, sized once
  std::vector<int64_t> ends_;           // allreduce_many's Layout::ends, reused
  std::vector<std::byte> block_;        // one reduction block, stays in L1
  std::vector<float> wide_a_, wide_b_;  // float32 accumulators for 16-bit floats
  int64_t chunk_bytes_ = 0;             // set_chunk_bytes; 0 = the whole slot
  StoreChooser stores_;                 // how ring allreduces write the slots peers read
  uint64_t favoured_mask_ = 0;          // rank 0: size classes it favours streaming for (kStores)
};

}  // namespace korovod::shm
