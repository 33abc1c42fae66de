//! A compiled fused group at run time: its loop extents for this call, its inputs'
//! strided views, and its output buffers (one per stored node, the reduction's last).
//! Its output buffers are reused across runs (`out_pool`).

use crate::compile::internal;
use crate::compile::ir::{Node, NodeId};
use crate::compile::jit::gelu_avx2;
use crate::compile::jit::kernel::FloatType;
use crate::compile::jit::views::{BufView, BufViewMut, KernelElem};
use crate::compile::jit::CompiledKernel;
use crate::compile::passes::fuse::Group;
use crate::compile::runtime::gelu_grad::{self, GeluGrad};
use crate::compile::runtime::opt_update::{self, Update};
use crate::compile::runtime::out_pool::OutputPool;
use crate::error::Result;
use crate::tensor::dtype::Elem;
use crate::tensor::shape::{broadcast_shapes, Dims};
use crate::tensor::Tensor;
use smallvec::SmallVec;
use std::cell::Cell;

/// A fused step's values, one per stored node (inline up to four: a loop body's kernel
/// call allocates no list).
pub type GroupValues = SmallVec<[Tensor; 4]>;

/// A compiled fused group: computes the nodes `outputs` (the root last) from `inputs`.
pub struct FusedStep {
    pub root: NodeId,
    pub inputs: Vec<NodeId>,
    /// The nodes whose values the kernel stores, in buffer order; the root is last.
    pub outputs: Vec<NodeId>,
    pub kernel: std::sync::Arc<CompiledKernel>,
    /// The loop nest's shape (a reduction's input shape).
    shape: Vec<usize>,
    /// A mean: the kernel's sum is divided by the reduced count of each call.
    is_mean: bool,
    /// The output buffers reused across runs.
    pub pool: OutputPool,
    /// Runs that took the inline path (`run_inline`), for tests and logs.
    inline_runs: Cell<usize>,
    /// A native routine that runs this group instead of the kernel where the layout
    /// allows (same bits as the kernel).
    pub native: Option<Native>,
}

/// The groups a native Rust routine runs (8-lane AVX2; the Cranelift kernels have 4).
#[derive(Debug, Clone, PartialEq)]
pub enum Native {
    /// A lone `GeluTanh` on a CPU with AVX2+FMA (`gelu_avx2`): dense runs.
    Gelu,
    /// An optimizer update run by eager's fused routine (`opt_update`).
    Update(Update),
    /// The exact GELU's gradient run by eager's fused pass (`gelu_grad`).
    GeluGrad(GeluGrad),
}

impl FusedStep {
    pub fn new(
        group: Group,
        kernel: std::sync::Arc<CompiledKernel>,
        native: Option<Native>,
    ) -> FusedStep {
        let gelu = gelu_avx2::available() && gelu_avx2::is_lone_gelu(kernel.kernel());
        let native = native.or(gelu.then_some(Native::Gelu));
        FusedStep {
            native,
            root: group.root,
            inputs: group.inputs,
            outputs: group.outputs,
            kernel,
            shape: group.shape,
            is_mean: group.is_mean,
            pool: OutputPool::default(),
            inline_runs: Cell::new(0),
        }
    }

    /// How many runs took the inline path (small elementwise kernels on the calling
    /// thread).
    pub fn inline_runs(&self) -> usize {
        self.inline_runs.get()
    }

    /// A fused group's loop extents and root shape in this call: its inputs' shapes
    /// broadcast (members are elementwise, reductions over trailing dims come last),
    /// which under symbolic sizes differ from the capture-time shapes.
    fn shapes(&self, node: &Node, args: &[Tensor]) -> Result<(Dims, Dims)> {
        let mut shape: Dims = Dims::new();
        for t in args {
            shape = broadcast_shapes("fused kernel", &shape, t.shape())?;
        }
        if args.is_empty() {
            shape = self.shape.iter().copied().collect();
        }
        if shape.len() != self.shape.len() {
            return Err(internal("fused group rank changed"));
        }
        let reduced = self.kernel.kernel().reduced_dims();
        let outer = shape.len().saturating_sub(reduced);
        let mut out: Dims = shape[..outer].iter().copied().collect();
        if node.shape.len() == shape.len() && reduced > 0 {
            out.extend(std::iter::repeat_n(1, reduced));
        } else if node.shape.len() != out.len() {
            return Err(internal("fused group result rank changed"));
        }
        Ok((shape, out))
    }

    /// Runs the kernel on `args` (its gathered inputs; `node` is the root) into
    /// contiguous tensors of the kernel's dtype, one per node of `outputs`.
    pub fn run(&self, node: &Node, args: &[Tensor]) -> Result<GroupValues> {
        match self.kernel.kernel().dtype {
            FloatType::F32 => self.run_as::<f32>(node, args),
            FloatType::F64 => self.run_as::<f64>(node, args),
        }
    }

    fn run_as<T: Lane>(&self, node: &Node, args: &[Tensor]) -> Result<GroupValues> {
        if let Some(Native::GeluGrad(plan)) = &self.native {
            if let Some(results) = self.run_gelu_grad::<T>(plan, args)? {
                return Ok(results);
            }
        }
        if let Some(results) = self.run_inline::<T>(args)? {
            return Ok(results);
        }
        let (ext_shape, root_shape) = self.shapes(node, args)?;
        let mut ext = extents(&ext_shape);
        let results = self.output_tensors::<T>(&ext_shape, &root_shape)?;
        if let Some(Native::Update(u)) = &self.native {
            if opt_update::run(u, args, &results)? {
                self.pool.remember(&results);
                return Ok(results);
            }
        }
        // Inputs whose innermost stride does not match the kernel's access are copied.
        // Inline up to four inputs: a small kernel's run allocates no argument lists.
        let mut owned: SmallVec<[(Tensor, Strides); 4]> = SmallVec::new();
        for (t, acc) in args.iter().zip(&self.kernel.kernel().inputs) {
            let st = broadcast_strides(t, &ext)?;
            if crate::compile::jit::views::check_access("input", *acc, &st, &ext).is_ok() {
                owned.push((t.clone(), st));
            } else {
                let c = t.contiguous()?;
                let st = broadcast_strides(&c, &ext)?;
                owned.push((c, st));
            }
        }
        if self.kernel.kernel().reduced_dims() == 0 {
            coalesce(&mut ext, &mut owned);
        }
        {
            // Every output's storage is unique, so it is none of the inputs' storages
            // and no other output's.
            let bufs: SmallVec<[_; 4]> = owned.iter().map(|(t, _)| t.storage().borrow()).collect();
            let mut views: SmallVec<[BufView<T>; 4]> = SmallVec::new();
            for ((t, st), b) in owned.iter().zip(&bufs) {
                let Some(data) = T::slice(b) else {
                    return Err(internal("fused input is not of its kernel's dtype"));
                };
                views.push(BufView {
                    data,
                    offset: t.offset(),
                    strides: st,
                });
            }
            self.run_into(&views, &results, &ext)?;
        }
        self.pool.remember(&results);
        Ok(results)
    }

    /// A GELU-gradient group run by eager's pass (`gelu_grad`); None: the kernel runs.
    fn run_gelu_grad<T: Lane>(
        &self,
        plan: &GeluGrad,
        args: &[Tensor],
    ) -> Result<Option<GroupValues>> {
        let Some(shape) = gelu_grad::shape(plan, args) else {
            return Ok(None);
        };
        let results = self.output_tensors::<T>(shape, shape)?;
        let ran = gelu_grad::run(plan, args, &results)?;
        self.pool.remember(&results);
        Ok(ran.then_some(results))
    }

    /// An elementwise group whose inputs are contiguous tensors of one shape and
    /// small (a loop body's kernel over one row): run on the calling thread over plain
    /// slices (`CompiledKernel::run_inline`), without broadcasting the inputs or
    /// planning views. None: the general path runs it.
    fn run_inline<T: Lane>(&self, args: &[Tensor]) -> Result<Option<GroupValues>> {
        let Some(shape) = args.first().map(Tensor::shape) else {
            return Ok(None);
        };
        let plain = |t: &Tensor| t.shape() == shape && t.is_contiguous();
        if self.is_mean || shape.len() != self.shape.len() || !args.iter().all(plain) {
            return Ok(None);
        }
        let n: usize = shape.iter().product();
        if n >= crate::compile::jit::parallel::PARALLEL_THRESHOLD
            || self.kernel.kernel().reduced_dims() > 0
        {
            return Ok(None);
        }
        let results = self.output_tensors::<T>(shape, shape)?;
        let ran = {
            let ins: Option<SmallVec<[_; 4]>> = args.iter().map(elems::<T>).collect();
            let outs: Option<SmallVec<[_; 4]>> = results.iter().map(elems_mut::<T>).collect();
            match (ins, outs) {
                (Some(ins), Some(mut outs)) => {
                    let ins: SmallVec<[&[T]; 4]> = ins.iter().map(|r| &**r).collect();
                    let mut outs: SmallVec<[&mut [T]; 4]> =
                        outs.iter_mut().map(|r| &mut **r).collect();
                    self.kernel.run_inline(&ins, &mut outs, &extents(shape))?
                }
                _ => false,
            }
        };
        // Not run: the buffers go back to the pool for the general path.
        self.pool.remember(&results);
        if ran {
            self.inline_runs.set(self.inline_runs.get() + 1);
        }
        Ok(ran.then_some(results))
    }

    /// Output tensors: every stored member of the loop shape, the root of `root_shape`.
    fn output_tensors<T: Elem>(
        &self,
        ext_shape: &[usize],
        root_shape: &[usize],
    ) -> Result<GroupValues> {
        let last = self.outputs.len().saturating_sub(1);
        (0..self.outputs.len())
            .map(|o| {
                let shape = if o == last { root_shape } else { ext_shape };
                let n = shape.iter().product();
                self.pool.take_as::<T>(shape, n)
            })
            .collect()
    }

    /// Runs the kernel over `ext` from `views` into `results` (mean: the reduction
    /// output divided by this call's reduced count).
    fn run_into<T: Lane>(
        &self,
        views: &[BufView<T>],
        results: &[Tensor],
        ext: &[usize],
    ) -> Result<()> {
        let outer = ext.len() - self.kernel.kernel().reduced_dims();
        let full = contiguous_strides(ext);
        let reduced = contiguous_strides(&ext[..outer]);
        let mut bufs: SmallVec<[_; 4]> = results.iter().map(|t| t.storage().borrow_mut()).collect();
        let last = bufs.len().saturating_sub(1);
        let mut outs: SmallVec<[BufViewMut<T>; 4]> = SmallVec::new();
        for (o, b) in bufs.iter_mut().enumerate() {
            let Some(data) = T::slice_mut(b) else {
                return Err(internal("fused output is not of its kernel's dtype"));
            };
            let st = if o == last { &reduced } else { &full };
            outs.push(BufViewMut::new(data, st));
        }
        let native = self.native == Some(Native::Gelu) && T::native_gelu(views, &mut outs, ext);
        if !native {
            self.kernel.run_typed(views, &mut outs, ext)?;
        }
        if self.is_mean {
            // The reduced count of this call (symbolic sizes change it).
            let c = ext[outer..].iter().product::<usize>();
            if let Some(out) = outs.last_mut() {
                out.data.iter_mut().for_each(|v| *v = T::div_count(*v, c));
            }
        }
        Ok(())
    }
}

/// The element type of a fused step's buffers (its kernel's [`FloatType`]).
trait Lane: KernelElem + Elem {
    /// `v` divided by a mean's count.
    fn div_count(v: Self, count: usize) -> Self;
    /// Runs a lone GELU by `gelu_avx2` (f32 only); false when it did not run.
    fn native_gelu(views: &[BufView<Self>], outs: &mut [BufViewMut<Self>], ext: &[usize]) -> bool;
}

impl Lane for f32 {
    fn div_count(v: f32, count: usize) -> f32 {
        v / count as f32
    }
    fn native_gelu(views: &[BufView<f32>], outs: &mut [BufViewMut<f32>], ext: &[usize]) -> bool {
        match (views, outs) {
            ([x], [y]) => gelu_avx2::run_views(x, y, ext),
            _ => false,
        }
    }
}

impl Lane for f64 {
    fn div_count(v: f64, count: usize) -> f64 {
        v / count as f64
    }
    fn native_gelu(_: &[BufView<f64>], _: &mut [BufViewMut<f64>], _: &[usize]) -> bool {
        false
    }
}

/// The contiguous elements of `t` when it holds `T`s.
fn elems<T: Elem>(t: &Tensor) -> Option<std::cell::Ref<'_, [T]>> {
    if t.dtype() != T::DTYPE || !t.is_contiguous() {
        return None;
    }
    let range = t.offset()..t.offset() + t.numel();
    std::cell::Ref::filter_map(t.storage().try_borrow()?, |b| T::slice(b)?.get(range)).ok()
}

/// The contiguous elements of `t`, writable, when it holds `T`s.
fn elems_mut<T: Elem>(t: &Tensor) -> Option<std::cell::RefMut<'_, [T]>> {
    if t.dtype() != T::DTYPE || !t.is_contiguous() {
        return None;
    }
    let range = t.offset()..t.offset() + t.numel();
    std::cell::RefMut::filter_map(t.storage().try_borrow_mut()?, |b| {
        T::slice_mut(b)?.get_mut(range)
    })
    .ok()
}

/// `shape` as kernel extents (a 0-d tensor is one element of rank 1).
fn extents(shape: &[usize]) -> Dims {
    if shape.is_empty() {
        Dims::from_elem(1, 1)
    } else {
        shape.iter().copied().collect()
    }
}

/// Element strides of a kernel operand (inline up to rank 6: no allocation per run).
type Strides = SmallVec<[isize; 6]>;

/// Element strides of `t` broadcast to `ext` (right-aligned; stride 0 where expanded).
fn broadcast_strides(t: &Tensor, ext: &[usize]) -> Result<Strides> {
    let (shape, strides) = (t.shape(), t.strides());
    let lead = ext
        .len()
        .checked_sub(shape.len())
        .ok_or_else(|| internal("fused input has a higher rank than its group"))?;
    Ok((0..ext.len())
        .map(|d| match d.checked_sub(lead) {
            Some(i) if shape[i] == ext[d] => strides[i] as isize,
            _ => 0,
        })
        .collect())
}

/// Merges runs of dims 1.. that every operand walks as one (an input's stride of a dim
/// is its stride of the next merged dim times that dim's extent; outputs are
/// contiguous), keeping the rank: the merged dim takes the product of the extents and
/// the dims merged into it get extent 1 (stride 0). A contiguous `[64, 32, 14, 14]`
/// elementwise kernel then runs 64 rows of 6272 elements (unrolled vectors), not rows
/// of 14 (mostly scalar tails); dim 0 stays whole, the threads split it.
fn coalesce(ext: &mut [usize], inputs: &mut [(Tensor, Strides)]) {
    let Some(mut inner) = ext.len().checked_sub(1) else {
        return;
    };
    for d in (1..inner).rev() {
        let walks = |st: &Strides| match (st.get(d), st.get(inner)) {
            (Some(&s), Some(&i)) => s == i * ext[inner] as isize,
            _ => false,
        };
        if ext[d] == 1 || inputs.iter().all(|(_, st)| walks(st)) {
            ext[inner] *= ext[d];
            ext[d] = 1;
            for (_, st) in inputs.iter_mut() {
                if let Some(s) = st.get_mut(d) {
                    *s = 0;
                }
            }
        } else {
            inner = d;
        }
    }
}

fn contiguous_strides(ext: &[usize]) -> Strides {
    let mut st: Strides = SmallVec::from_elem(1, ext.len());
    for d in (0..ext.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * ext[d + 1] as isize;
    }
    st
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operand(strides: &[isize]) -> (Tensor, Strides) {
        (
            Tensor::from_vec(vec![0.0f32], &[1]),
            strides.iter().copied().collect(),
        )
    }

    /// Contiguous operands of `[4, 3, 5, 7]` run as 4 rows of 105; dim 0 stays.
    #[test]
    fn contiguous_dims_after_the_first_merge() {
        let mut ext = [4, 3, 5, 7];
        let mut ops = [operand(&[105, 35, 7, 1]), operand(&[105, 35, 7, 1])];
        coalesce(&mut ext, &mut ops);
        assert_eq!(ext, [4, 1, 1, 105]);
        assert_eq!(&ops[0].1[..], &[105, 0, 0, 1]);
        assert_eq!(contiguous_strides(&ext)[0], 105, "outputs keep their rows");
    }

    /// A per-channel operand (`[3, 1, 1]` broadcast to `[4, 3, 5, 7]`) keeps the
    /// channel dim apart; the spatial dims still merge.
    #[test]
    fn a_broadcast_channel_stays_its_own_dim() {
        let mut ext = [4, 3, 5, 7];
        let mut ops = [operand(&[105, 35, 7, 1]), operand(&[0, 1, 0, 0])];
        coalesce(&mut ext, &mut ops);
        assert_eq!(ext, [4, 3, 1, 35]);
        assert_eq!(&ops[1].1[..], &[0, 1, 0, 0]);
        assert_eq!(&ops[0].1[..], &[105, 35, 0, 1]);
    }

    /// A transposed operand merges nothing it does not walk in order.
    #[test]
    fn a_permuted_operand_blocks_the_merge() {
        let mut ext = [2, 3, 4];
        let mut ops = [operand(&[12, 4, 1]), operand(&[12, 1, 3])];
        coalesce(&mut ext, &mut ops);
        assert_eq!(ext, [2, 3, 4]);
    }
}
