;; The lip-sync classifier's dense layers in WebAssembly with 128-bit SIMD (four f32 lanes): the source of
;; src/media/lipsync/dense_wasm.ts (rebuilt by scripts/lipsync/build_dense_wasm.ts; a test checks the two
;; agree). The caller owns the memory layout.
(module
  (memory (export "memory") 2)
  ;; y[o] = b[o] + Σ_i w[o·n + i] · x[i] for o < m, clamped at 0 when relu ≠ 0. Pointers are byte
  ;; offsets of f32 arrays; n must be a multiple of 4, and w and x 16-byte aligned.
  (func (export "dense")
    (param $w i32) (param $b i32) (param $x i32) (param $y i32) (param $n i32) (param $m i32) (param $relu i32)
    (local $o i32) (local $i i32) (local $row i32) (local $nb i32) (local $acc v128) (local $s f32)
    (local.set $nb (i32.shl (local.get $n) (i32.const 2)))
    (local.set $row (local.get $w))
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $o) (local.get $m)))
        (local.set $acc (v128.const f32x4 0 0 0 0))
        (local.set $i (i32.const 0))
        (block $rowdone
          (loop $cols
            (br_if $rowdone (i32.ge_u (local.get $i) (local.get $nb)))
            (local.set $acc
              (f32x4.add
                (local.get $acc)
                (f32x4.mul
                  (v128.load (i32.add (local.get $row) (local.get $i)))
                  (v128.load (i32.add (local.get $x) (local.get $i))))))
            (local.set $i (i32.add (local.get $i) (i32.const 16)))
            (br $cols)))
        (local.set $s
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
            (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
        (local.set $s
          (f32.add (local.get $s) (f32.load (i32.add (local.get $b) (i32.shl (local.get $o) (i32.const 2))))))
        (if (i32.and (i32.ne (local.get $relu) (i32.const 0)) (f32.lt (local.get $s) (f32.const 0)))
          (then (local.set $s (f32.const 0))))
        (f32.store (i32.add (local.get $y) (i32.shl (local.get $o) (i32.const 2))) (local.get $s))
        (local.set $row (i32.add (local.get $row) (local.get $nb)))
        (local.set $o (i32.add (local.get $o) (i32.const 1)))
        (br $rows))))
)
