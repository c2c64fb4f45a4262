;; The lip-sync classifier's dense layers in WebAssembly with 128-bit SIMD (four f32 lanes): the source of
;; src/media/lipsync/dense_wasm.ts (rebuilt by scripts/lipsync/build_wasm.ts; a test checks the two agree).
;; The caller owns the memory layout.
(module
  (memory (export "memory") 2)
  ;; y[o] = b[o] + Σ_i w[i·m + o] · x[i] for o < m, clamped at 0 when relu ≠ 0. The weights are stored input
  ;; by input (each input's m weights together), so four outputs share a lane vector: each input's value is
  ;; broadcast and multiplied into the sums of 32 outputs at a time (eight independent sums: the additions do
  ;; not wait on one another), then of four at a time. Each output's sum runs over the inputs in order.
  ;; Pointers are byte offsets of f32 arrays, 16-byte aligned; m must be a multiple of 4.
  (func (export "dense")
    (param $w i32) (param $b i32) (param $x i32) (param $y i32) (param $n i32) (param $m i32) (param $relu i32)
    (local $o i32) (local $mb i32) (local $i i32) (local $nb i32) (local $p i32) (local $xi v128) (local $zero v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $a4 v128) (local $a5 v128) (local $a6 v128) (local $a7 v128)
    (local.set $nb (i32.shl (local.get $n) (i32.const 2)))
    (local.set $mb (i32.shl (local.get $m) (i32.const 2)))
    (local.set $zero
      (if (result v128) (local.get $relu)
        (then (v128.const f32x4 0 0 0 0))
        (else (v128.const f32x4 -inf -inf -inf -inf))))
    ;; Blocks of 32 outputs ($o: byte offset of the block's first output).
    (block $blocksdone
      (loop $blocks
        (br_if $blocksdone (i32.gt_u (i32.add (local.get $o) (i32.const 128)) (local.get $mb)))
        (local.set $p (i32.add (local.get $b) (local.get $o)))
        (local.set $a0 (v128.load (local.get $p)))
        (local.set $a1 (v128.load offset=16 (local.get $p)))
        (local.set $a2 (v128.load offset=32 (local.get $p)))
        (local.set $a3 (v128.load offset=48 (local.get $p)))
        (local.set $a4 (v128.load offset=64 (local.get $p)))
        (local.set $a5 (v128.load offset=80 (local.get $p)))
        (local.set $a6 (v128.load offset=96 (local.get $p)))
        (local.set $a7 (v128.load offset=112 (local.get $p)))
        (local.set $p (i32.add (local.get $w) (local.get $o)))
        (local.set $i (i32.const 0))
        (block $inputsdone
          (loop $inputs
            (br_if $inputsdone (i32.ge_u (local.get $i) (local.get $nb)))
            (local.set $xi (v128.load32_splat (i32.add (local.get $x) (local.get $i))))
            (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (v128.load (local.get $p)) (local.get $xi))))
            (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (v128.load offset=16 (local.get $p)) (local.get $xi))))
            (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (v128.load offset=32 (local.get $p)) (local.get $xi))))
            (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (v128.load offset=48 (local.get $p)) (local.get $xi))))
            (local.set $a4 (f32x4.add (local.get $a4) (f32x4.mul (v128.load offset=64 (local.get $p)) (local.get $xi))))
            (local.set $a5 (f32x4.add (local.get $a5) (f32x4.mul (v128.load offset=80 (local.get $p)) (local.get $xi))))
            (local.set $a6 (f32x4.add (local.get $a6) (f32x4.mul (v128.load offset=96 (local.get $p)) (local.get $xi))))
            (local.set $a7 (f32x4.add (local.get $a7) (f32x4.mul (v128.load offset=112 (local.get $p)) (local.get $xi))))
            (local.set $p (i32.add (local.get $p) (local.get $mb)))
            (local.set $i (i32.add (local.get $i) (i32.const 4)))
            (br $inputs)))
        (local.set $p (i32.add (local.get $y) (local.get $o)))
        (v128.store (local.get $p) (f32x4.max (local.get $a0) (local.get $zero)))
        (v128.store offset=16 (local.get $p) (f32x4.max (local.get $a1) (local.get $zero)))
        (v128.store offset=32 (local.get $p) (f32x4.max (local.get $a2) (local.get $zero)))
        (v128.store offset=48 (local.get $p) (f32x4.max (local.get $a3) (local.get $zero)))
        (v128.store offset=64 (local.get $p) (f32x4.max (local.get $a4) (local.get $zero)))
        (v128.store offset=80 (local.get $p) (f32x4.max (local.get $a5) (local.get $zero)))
        (v128.store offset=96 (local.get $p) (f32x4.max (local.get $a6) (local.get $zero)))
        (v128.store offset=112 (local.get $p) (f32x4.max (local.get $a7) (local.get $zero)))
        (local.set $o (i32.add (local.get $o) (i32.const 128)))
        (br $blocks)))
    ;; The rest, four outputs at a time.
    (block $quadsdone
      (loop $quads
        (br_if $quadsdone (i32.ge_u (local.get $o) (local.get $mb)))
        (local.set $a0 (v128.load (i32.add (local.get $b) (local.get $o))))
        (local.set $p (i32.add (local.get $w) (local.get $o)))
        (local.set $i (i32.const 0))
        (block $inputsdone
          (loop $inputs
            (br_if $inputsdone (i32.ge_u (local.get $i) (local.get $nb)))
            (local.set $a0
              (f32x4.add (local.get $a0)
                (f32x4.mul (v128.load (local.get $p)) (v128.load32_splat (i32.add (local.get $x) (local.get $i))))))
            (local.set $p (i32.add (local.get $p) (local.get $mb)))
            (local.set $i (i32.add (local.get $i) (i32.const 4)))
            (br $inputs)))
        (v128.store (i32.add (local.get $y) (local.get $o)) (f32x4.max (local.get $a0) (local.get $zero)))
        (local.set $o (i32.add (local.get $o) (i32.const 16)))
        (br $quads))))
)
