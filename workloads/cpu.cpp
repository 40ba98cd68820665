#include "workloads/cpu.hpp"

#include <Eigen/Dense>
#include <malloc.h>

#include <chrono>
#include <cmath>
#include <new>
#include <random>
#include <system_error>

#include <fmt/format.h>

#include "core/metric_names.hpp"
#include "core/text.hpp"
#include "workloads/harness.hpp"
#include "workloads/loader.hpp"
#include "workloads/measure.hpp"
#include "workloads/pipeline_knobs.hpp"

namespace autotune {

namespace {

using Mat = Eigen::MatrixXf;  // column-major: one column per sample
using Vec = Eigen::VectorXf;

// Host bytes of the model: weights, gradients, two Adam moments, and the
// activations and their gradients for one micro-batch.
double mlp_host_bytes(const MlpShape& s, std::int64_t batch) {
  const auto d = s.dims();
  double act = 0;
  for (std::size_t l = 1; l < d.size(); ++l) act += static_cast<double>(d[l]);
  return 4.0 * (4.0 * s.parameters() + 3.0 * act * static_cast<double>(batch));
}

// An MLP with ReLU hidden layers and a softmax cross-entropy head, FP32.
class Mlp {
 public:
  Mlp(const MlpShape& s, std::int64_t batch, bool adam, float lr, std::uint64_t seed)
      : m_adam(adam), m_lr(lr) {
    const auto d = s.dims();
    std::mt19937_64 rng(seed);
    const std::size_t layers = d.size() - 1;
    m_w.resize(layers);
    m_b.resize(layers);
    m_gw.resize(layers);
    m_gb.resize(layers);
    m_mw.resize(layers);
    m_vw.resize(layers);
    m_mb.resize(layers);
    m_vb.resize(layers);
    m_h.resize(layers);
    for (std::size_t l = 0; l < layers; ++l) {
      const auto in = static_cast<Eigen::Index>(d[l]), out = static_cast<Eigen::Index>(d[l + 1]);
      std::normal_distribution<float> n(0.0f, std::sqrt(2.0f / static_cast<float>(in)));  // He init
      m_w[l] = Mat(out, in);
      for (Eigen::Index i = 0; i < m_w[l].size(); ++i) m_w[l].data()[i] = n(rng);
      m_b[l] = Vec::Zero(out);
      m_gw[l] = Mat::Zero(out, in);
      m_gb[l] = Vec::Zero(out);
      if (adam) {
        m_mw[l] = Mat::Zero(out, in);
        m_vw[l] = Mat::Zero(out, in);
        m_mb[l] = Vec::Zero(out);
        m_vb[l] = Vec::Zero(out);
      }
      m_h[l] = Mat(out, static_cast<Eigen::Index>(batch));
    }
    m_dh = Mat(static_cast<Eigen::Index>(s.width > s.classes ? s.width : s.classes), static_cast<Eigen::Index>(batch));
    m_dz = m_dh;
  }

  // Forward and backward over one micro-batch; gradients accumulate, scaled
  // by 1 / (samples per optimizer step). Returns the mean loss of the batch.
  double accumulate(const Batch& b, std::int64_t input_dim, double grad_scale) {
    const auto B = static_cast<Eigen::Index>(b.size);
    Eigen::Map<const Mat> x(b.inputs, static_cast<Eigen::Index>(input_dim), B);
    const std::size_t L = m_w.size();
    for (std::size_t l = 0; l < L; ++l) {
      Mat& h = m_h[l];
      if (l == 0)
        h.noalias() = m_w[l] * x;
      else
        h.noalias() = m_w[l] * m_h[l - 1];
      h.colwise() += m_b[l];
      if (l + 1 < L) h = h.cwiseMax(0.0f);
    }
    // Softmax cross-entropy, column by column; the logits become dlogits.
    Mat& z = m_h[L - 1];
    double loss = 0;
    for (Eigen::Index j = 0; j < B; ++j) {
      auto col = z.col(j);
      const float mx = col.maxCoeff();
      col = (col.array() - mx).exp();
      const float sum = col.sum();
      col /= sum;
      const auto y = static_cast<Eigen::Index>(b.labels[j]);
      loss -= std::log(std::max(col(y), 1e-30f));
      col(y) -= 1.0f;
    }
    const auto gs = static_cast<float>(grad_scale);
    // Backward.
    auto dz = m_dz.topRows(z.rows());
    dz = z * gs;
    for (std::size_t l = L; l-- > 0;) {
      const auto rows = m_w[l].rows(), cols = m_w[l].cols();
      auto g = m_dz.topRows(rows);
      if (l == 0)
        m_gw[l].noalias() += g * x.transpose();
      else
        m_gw[l].noalias() += g * m_h[l - 1].transpose();
      m_gb[l] += g.rowwise().sum();
      if (l == 0) break;
      auto dh = m_dh.topRows(cols);
      dh.noalias() = m_w[l].transpose() * g;
      // ReLU: the gradient passes where the activation was positive.
      m_dz.topRows(cols).array() = (m_h[l - 1].array() > 0.0f).select(dh.array(), 0.0f);
    }
    return loss / static_cast<double>(B);
  }

  void step() {
    ++m_t;
    constexpr float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    const float c1 = 1.0f - std::pow(b1, static_cast<float>(m_t));
    const float c2 = 1.0f - std::pow(b2, static_cast<float>(m_t));
    for (std::size_t l = 0; l < m_w.size(); ++l) {
      if (m_adam) {
        adam(m_w[l].array(), m_gw[l].array(), m_mw[l].array(), m_vw[l].array(), b1, b2, c1, c2, eps);
        adam(m_b[l].array(), m_gb[l].array(), m_mb[l].array(), m_vb[l].array(), b1, b2, c1, c2, eps);
      } else {
        m_w[l] -= m_lr * m_gw[l];
        m_b[l] -= m_lr * m_gb[l];
      }
      m_gw[l].setZero();
      m_gb[l].setZero();
    }
  }

 private:
  template <class P, class G, class M, class V>
  void adam(P p, G g, M m, V v, float b1, float b2, float c1, float c2, float eps) const {
    m = b1 * m + (1.0f - b1) * g;
    v = b2 * v + (1.0f - b2) * g.square();
    p -= m_lr * (m / c1) / ((v / c2).sqrt() + eps);
  }

  bool m_adam;
  float m_lr;
  std::int64_t m_t = 0;
  std::vector<Mat> m_w, m_gw, m_mw, m_vw, m_h;
  std::vector<Vec> m_b, m_gb, m_mb, m_vb;
  Mat m_dh, m_dz;
};

// Eigen allocates its GEMM packing buffers (hundreds of KiB) on the heap for
// every product, and glibc by default gives such blocks back to the kernel
// on free (mmap or heap trimming), so every product faulted them in afresh:
// 270k page faults in one 3.5 s trial at batch 256, and a throughput that
// depended on the process's heap history (44k samples/s in a fresh process,
// 53k in a child forked from the tuner, same configuration). Keeping freed
// memory in the process, as a training framework's caching allocator does,
// leaves 10k faults (the buffers' first touch) and 52k samples/s in both.
void keep_freed_memory() {
  ::mallopt(M_MMAP_THRESHOLD, 64 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The cpu workload's part of the harness's step: Eigen's forward and backward
// on the host, timed as compute; the loader's wait is the rest.
class EigenTrainer final : public Trainer {
 public:
  EigenTrainer(Loader& loader, const MlpShape& shape, const PipelineKnobs& k, const Options& opts)
      : m_loader(loader),
        m_mlp(shape, k.loader.batch_size, opts.get_string("optimizer") == "adam",
              static_cast<float>(opts.get_number("learning_rate")), k.loader.seed ^ 0x5851F42D4C957F2DULL),
        m_input_dim(shape.input_dim),
        m_grad_accum(k.grad_accum),
        m_grad_scale(1.0 / static_cast<double>(k.loader.batch_size * k.grad_accum)) {}

  bool micro_batch(StepResult& s) override {
    BatchLease b = m_loader.next();
    if (!b) return false;
    const auto c0 = std::chrono::steady_clock::now();
    m_step_loss += m_mlp.accumulate(*b, m_input_dim, m_grad_scale);
    s.busy_seconds += seconds_since(c0);
    s.samples += b->size;
    return true;
  }

  void optimizer_step(StepResult& s) override {
    const auto c0 = std::chrono::steady_clock::now();
    m_mlp.step();
    s.busy_seconds += seconds_since(c0);
    m_last_loss = m_step_loss / static_cast<double>(m_grad_accum);
    m_step_loss = 0;
  }

  double last_loss() const { return m_last_loss; }

 private:
  Loader& m_loader;
  Mlp m_mlp;
  std::int64_t m_input_dim, m_grad_accum;
  double m_grad_scale;
  double m_step_loss = 0, m_last_loss = 0;
};

class CpuWorkload final : public Workload {
 public:
  explicit CpuWorkload(Options o) : m_opts(std::move(o)) {}
  std::string_view kind() const override { return "cpu"; }

  Outcome measure(const Assignment& config, const TrialContext& ctx) override {
    const auto t0 = std::chrono::steady_clock::now();
    Outcome o = run(config, ctx);
    o.seconds = seconds_since(t0);
    return o;
  }

 private:
  // The harness's trial (workloads/harness.hpp) with the cpu workload's own
  // parts: fp32 only, the model's host memory, Eigen's threads.
  Outcome run(const Assignment& config, const TrialContext& ctx) {
    MlpShape shape;
    PipelineKnobs k;
    if (auto why = read_trial_knobs(m_opts, config, ctx, shape, k); !why.empty())
      return Outcome::failure(Status::error, why);
    if (k.precision != "fp32")
      return Outcome::failure(Status::error, "the cpu workload computes in fp32 only; precision=" + k.precision +
                                                 " is not supported (declare precision: [fp32] for cpu)");

    const double estimate = loader_host_bytes(k.loader) + mlp_host_bytes(shape, k.loader.batch_size);
    const double ram_limit = ctx.limits.ram_bytes;
    if (auto o = over_ram_estimate(estimate, ram_limit)) {
      o->set(metric::ram_estimate_bytes, estimate);
      return *o;
    }

    // Eigen parallelises its products with OpenMP only; without it this is 1.
    Eigen::setNbThreads(static_cast<int>(m_opts.get_int("threads")));
    keep_freed_memory();
    // What the process held before the trial (the tuner's own code and
    // libraries, a few MiB): part of ram_bytes, reported apart.
    const double ram_baseline = begin_host_memory();

    TrialSteps steps;
    double last_loss = 0;
    try {
      Loader loader(k.loader);
      EigenTrainer trainer(loader, shape, k, m_opts);
      steps = run_trial_steps(k, loader, trainer);
      last_loss = trainer.last_loss();
    } catch (const std::bad_alloc&) {
      return Outcome::failure(Status::host_oom, fmt::format("host allocation failed (estimated {})",
                                                            format_bytes(estimate)));
    } catch (const std::system_error& e) {
      return Outcome::failure(Status::error, std::string("could not start the loader's threads: ") + e.what());
    }
    Outcome o = measured_outcome(steps, ctx, ram_baseline, last_loss);
    if (!o.ok()) return o;
    if (!std::isfinite(last_loss))
      return Outcome::failure(Status::error, "the loss diverged (non-finite); lower learning_rate");

    o.set(metric::compute_busy, steps.r.busy_fraction);
    o.set(metric::data_wait_fraction, steps.wait_fraction);
    // Of the loader's calls, those that found no batch ready: unlike the wait,
    // not inflated by the trainer descheduled inside the call.
    o.set(metric::starved_share, steps.starved_share);
    o.set(metric::ram_estimate_bytes, estimate);
    mark_if_over_ram_limit(o, o.ram_bytes().value_or(0), ram_limit);
    // No device to copy to: page-locking changes nothing here.
    if (config.find("pin_memory")) o.labels["ignored"] = "pin_memory";
    return o;
  }

  Options m_opts;
};

}  // namespace

WorkloadInfo cpu_workload_info() {
  using I = std::int64_t;
  WorkloadInfo info;
  info.kind = "cpu";
  info.builtin_worker = true;
  info.precisions = {"fp32"};
  info.summary = "the harness's loader and an MLP trained with Eigen in fp32: real threads, compute and memory";
  info.options = {
      {"threads", OptionType::integer, OptionValue{I{1}},
       "threads for Eigen's products (needs OpenMP); 1 leaves the other cores to the loader", {}, 1.0, 1024.0},
  };
  for (auto& s : model_option_specs(ModelDefaults{})) info.options.push_back(std::move(s));
  for (auto& s : pipeline_option_specs(PipelineDefaults{})) info.options.push_back(std::move(s));
  info.make = [](const Options& o, const WorkloadEnv&) -> std::unique_ptr<Workload> {
    check_model_fits_samples(o, "cpu");
    return std::make_unique<CpuWorkload>(o);
  };
  return info;
}

}  // namespace autotune
