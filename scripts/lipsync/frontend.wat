;; The lip-sync front end in WebAssembly with 128-bit SIMD (four f32 lanes): the resampler to 16 kHz, the
;; pre-emphasis and the log-mel analysis of `src/media/lipsync/dsp.ts` (its JavaScript stays the reference
;; and the fallback). The source of src/media/lipsync/frontend_wasm.ts (rebuilt by
;; scripts/lipsync/build_wasm.ts; a test checks the two agree).
;;
;; The analysis' tables sit at the fixed byte offsets below (exported as globals, filled once by
;; src/media/lipsync/frontend.ts); the caller places everything else (resampling filters, buffers) at or
;; above `heap` and passes byte offsets. Each array is 16-byte aligned.
(module
  (memory (export "memory") 1)
  ;; 400 f32: the Hann window.
  (global $win (export "win") i32 (i32.const 1024))
  ;; 256 i32: for each index of the 256-point complex FFT, the byte offset (×4) of its bit-reversed index.
  (global $rev (export "rev") i32 (i32.const 2624))
  ;; The FFT's twiddles from the third stage on (half-lengths 4, 8, …, 128): per stage its cosines, then its
  ;; sines (e^(−2πij/len), j < half).
  (global $tw (export "tw") i32 (i32.const 3648))
  ;; 260 f32 each: cos and sin of −2πk/512 (k ≤ 256): the split of the packed real FFT.
  (global $pc (export "pc") i32 (i32.const 5664))
  (global $ps (export "ps") i32 (i32.const 6704))
  ;; 26 mel bands × (first bin × 4, weights' byte length (a multiple of 16), weights' byte offset, 0).
  (global $melb (export "melb") i32 (i32.const 7744))
  ;; Scratch: the windowed even and odd samples (256 f32 each; entries 200… stay zero), the FFT (260 f32
  ;; each), the power spectrum (300 f32).
  (global $wre i32 (i32.const 8160))
  (global $wim i32 (i32.const 9184))
  (global $re i32 (i32.const 10208))
  (global $im i32 (i32.const 11248))
  (global $pow i32 (i32.const 12288))
  ;; The first free byte.
  (global $heap (export "heap") i32 (i32.const 13488))

  ;; The sum of four lanes, as (0 + 2) + (1 + 3): the order the resampler's four-at-a-time reduction takes
  ;; (an output sample is the same whichever way it was computed).
  (func $hsum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 2 (local.get $v)))
      (f32.add (f32x4.extract_lane 1 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))

;; Natural log of four positive, normal f32: v = m·2^e with m in [√½, √2), f = m − 1, s = f / (2 + f),
  ;; ln(1 + f) = 2s·(1 + s²/3 + s⁴/5 + s⁶/7 + s⁸/9) (|s| < 0.172: the next term is below 2e-9), plus e·ln 2.
  ;; Within a few f32 ulps of Math.log; NaN stays NaN.
  (func $log4 (param $v v128) (result v128)
    (local $e v128) (local $m v128) (local $big v128) (local $s v128) (local $z v128) (local $p v128)
    (local.set $e (i32x4.sub (i32x4.shr_u (local.get $v) (i32.const 23)) (v128.const i32x4 127 127 127 127)))
    (local.set $m
      (v128.or (v128.and (local.get $v) (v128.const i32x4 0x7fffff 0x7fffff 0x7fffff 0x7fffff))
        (v128.const i32x4 0x3f800000 0x3f800000 0x3f800000 0x3f800000)))
    ;; m > √2: m/2, e + 1 (a true lane is −1).
    (local.set $big (f32x4.gt (local.get $m) (v128.const f32x4 1.4142135 1.4142135 1.4142135 1.4142135)))
    (local.set $m
      (v128.bitselect (f32x4.mul (local.get $m) (v128.const f32x4 0.5 0.5 0.5 0.5)) (local.get $m) (local.get $big)))
    (local.set $e (i32x4.sub (local.get $e) (local.get $big)))
    (local.set $s
      (f32x4.div (f32x4.sub (local.get $m) (v128.const f32x4 1 1 1 1))
        (f32x4.add (local.get $m) (v128.const f32x4 1 1 1 1))))
    (local.set $z (f32x4.mul (local.get $s) (local.get $s)))
    (local.set $p (v128.const f32x4 0.11111111 0.11111111 0.11111111 0.11111111))
    (local.set $p
      (f32x4.add (f32x4.mul (local.get $p) (local.get $z)) (v128.const f32x4 0.14285715 0.14285715 0.14285715 0.14285715)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $z)) (v128.const f32x4 0.2 0.2 0.2 0.2)))
    (local.set $p
      (f32x4.add (f32x4.mul (local.get $p) (local.get $z)) (v128.const f32x4 0.33333334 0.33333334 0.33333334 0.33333334)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $z)) (v128.const f32x4 1 1 1 1)))
    (f32x4.add
      (f32x4.add
        (f32x4.mul (f32x4.add (local.get $s) (local.get $s)) (local.get $p))
        (f32x4.mul (f32x4.convert_i32x4_s (local.get $e))
          (v128.const f32x4 0.6931472 0.6931472 0.6931472 0.6931472)))
      ;; 0, or NaN where v is NaN or infinite.
      (f32x4.sub (local.get $v) (local.get $v))))

  ;; The windowed-sinc resampler of StreamResampler (its exact-phase case): for each output sample while
  ;; `n < maxOut` and input index `ipos + half < len`, out[n] = Σ_k table[iphase][k] · buf[ipos − half + 1 + k],
  ;; then the position advances by p/q input samples. `stride` is a filter row's byte length (its taps padded
  ;; with zeros to a multiple of four: the buffer must hold three finite values past `len`). `ipos` and
  ;; `iphase` are read from and written back to the two i32 at `ctl`; ctl + 8 … ctl + 39 is scratch. Four
  ;; output samples at a time while four are due (four sums side by side, reduced together), then one at a
  ;; time. Returns the samples written.
  (func (export "resample")
    (param $table i32) (param $stride i32) (param $q i32) (param $p i32) (param $half i32)
    (param $buf i32) (param $len i32) (param $out i32) (param $maxOut i32) (param $ctl i32) (result i32)
    (local $n i32) (local $ipos i32) (local $iphase i32) (local $row i32) (local $src i32) (local $k i32)
    (local $acc v128) (local $whole i32)
    (local $ip i32) (local $ph i32) (local $j i32) (local $r0 i32) (local $r1 i32) (local $r2 i32) (local $r3 i32)
    (local $s0 i32) (local $s1 i32) (local $s2 i32) (local $s3 i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $lo v128) (local $hi v128)
    (local $frac i32)
    (local.set $ipos (i32.load (local.get $ctl)))
    (local.set $iphase (i32.load offset=4 (local.get $ctl)))
    ;; A step of p/q input samples: $whole samples and $frac/q (no division per output; iphase < q).
    (local.set $whole (i32.div_u (local.get $p) (local.get $q)))
    (local.set $frac (i32.rem_u (local.get $p) (local.get $q)))
    (block $quadsdone
      (loop $quads
        (br_if $quadsdone (i32.gt_u (i32.add (local.get $n) (i32.const 4)) (local.get $maxOut)))
        ;; The four outputs' filter rows and first inputs (each within the input, or one at a time).
        (local.set $ip (local.get $ipos))
        (local.set $ph (local.get $iphase))
        (local.set $j (i32.const 0))
        (loop $positions
          (br_if $quadsdone (i32.ge_s (i32.add (local.get $ip) (local.get $half)) (local.get $len)))
          (i32.store offset=8 (i32.add (local.get $ctl) (local.get $j))
            (i32.add (local.get $table) (i32.mul (local.get $ph) (local.get $stride))))
          (i32.store offset=12 (i32.add (local.get $ctl) (local.get $j))
            (i32.add (local.get $buf)
              (i32.shl (i32.add (i32.sub (local.get $ip) (local.get $half)) (i32.const 1)) (i32.const 2))))
          (local.set $ip (i32.add (local.get $ip) (local.get $whole)))
          (local.set $ph (i32.add (local.get $ph) (local.get $frac)))
          (if (i32.ge_u (local.get $ph) (local.get $q))
            (then
              (local.set $ph (i32.sub (local.get $ph) (local.get $q)))
              (local.set $ip (i32.add (local.get $ip) (i32.const 1)))))
          (local.set $j (i32.add (local.get $j) (i32.const 8)))
          (br_if $positions (i32.lt_u (local.get $j) (i32.const 32))))
        (local.set $r0 (i32.load offset=8 (local.get $ctl)))
        (local.set $s0 (i32.load offset=12 (local.get $ctl)))
        (local.set $r1 (i32.load offset=16 (local.get $ctl)))
        (local.set $s1 (i32.load offset=20 (local.get $ctl)))
        (local.set $r2 (i32.load offset=24 (local.get $ctl)))
        (local.set $s2 (i32.load offset=28 (local.get $ctl)))
        (local.set $r3 (i32.load offset=32 (local.get $ctl)))
        (local.set $s3 (i32.load offset=36 (local.get $ctl)))
        (local.set $a0 (v128.const f32x4 0 0 0 0))
        (local.set $a1 (v128.const f32x4 0 0 0 0))
        (local.set $a2 (v128.const f32x4 0 0 0 0))
        (local.set $a3 (v128.const f32x4 0 0 0 0))
        (local.set $k (i32.const 0))
        (loop $taps4
          (local.set $a0
            (f32x4.add (local.get $a0)
              (f32x4.mul (v128.load (i32.add (local.get $r0) (local.get $k)))
                (v128.load (i32.add (local.get $s0) (local.get $k))))))
          (local.set $a1
            (f32x4.add (local.get $a1)
              (f32x4.mul (v128.load (i32.add (local.get $r1) (local.get $k)))
                (v128.load (i32.add (local.get $s1) (local.get $k))))))
          (local.set $a2
            (f32x4.add (local.get $a2)
              (f32x4.mul (v128.load (i32.add (local.get $r2) (local.get $k)))
                (v128.load (i32.add (local.get $s2) (local.get $k))))))
          (local.set $a3
            (f32x4.add (local.get $a3)
              (f32x4.mul (v128.load (i32.add (local.get $r3) (local.get $k)))
                (v128.load (i32.add (local.get $s3) (local.get $k))))))
          (local.set $k (i32.add (local.get $k) (i32.const 16)))
          (br_if $taps4 (i32.lt_u (local.get $k) (local.get $stride))))
        ;; (a0₀ + a0₂, a0₁ + a0₃, a1₀ + a1₂, a1₁ + a1₃), the same for a2, a3; then the pairs' sums.
        (local.set $lo
          (f32x4.add
            (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $a0) (local.get $a1))
            (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $a0) (local.get $a1))))
        (local.set $hi
          (f32x4.add
            (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $a2) (local.get $a3))
            (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $a2) (local.get $a3))))
        (v128.store (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 2)))
          (f32x4.add
            (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $lo) (local.get $hi))
            (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $lo) (local.get $hi))))
        (local.set $n (i32.add (local.get $n) (i32.const 4)))
        (local.set $ipos (local.get $ip))
        (local.set $iphase (local.get $ph))
        (br $quads)))
    (block $done
      (loop $outs
        (br_if $done (i32.ge_u (local.get $n) (local.get $maxOut)))
        (br_if $done (i32.ge_s (i32.add (local.get $ipos) (local.get $half)) (local.get $len)))
        (local.set $row (i32.add (local.get $table) (i32.mul (local.get $iphase) (local.get $stride))))
        (local.set $src
          (i32.add (local.get $buf)
            (i32.shl (i32.add (i32.sub (local.get $ipos) (local.get $half)) (i32.const 1)) (i32.const 2))))
        (local.set $acc (v128.const f32x4 0 0 0 0))
        (local.set $k (i32.const 0))
        (loop $taps
          (local.set $acc
            (f32x4.add (local.get $acc)
              (f32x4.mul
                (v128.load (i32.add (local.get $row) (local.get $k)))
                (v128.load (i32.add (local.get $src) (local.get $k))))))
          (local.set $k (i32.add (local.get $k) (i32.const 16)))
          (br_if $taps (i32.lt_u (local.get $k) (local.get $stride))))
        (f32.store (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 2))) (call $hsum (local.get $acc)))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (local.set $ipos (i32.add (local.get $ipos) (local.get $whole)))
        (local.set $iphase (i32.add (local.get $iphase) (local.get $frac)))
        (if (i32.ge_u (local.get $iphase) (local.get $q))
          (then
            (local.set $iphase (i32.sub (local.get $iphase) (local.get $q)))
            (local.set $ipos (i32.add (local.get $ipos) (i32.const 1)))))
        (br $outs)))
    (i32.store (local.get $ctl) (local.get $ipos))
    (i32.store offset=4 (local.get $ctl) (local.get $iphase))
    (local.get $n))

  ;; Pre-emphasis: dst[i] = src[i] − 0.97 · src[i − 1] (src[−1] = prev), in f64 as in JavaScript (the same
  ;; f32 results). Returns src[n − 1] (prev when n = 0).
  (func (export "preemph") (param $src i32) (param $n i32) (param $dst i32) (param $prev f32) (result f32)
    (local $i i32) (local $x f32) (local $end i32)
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $x (f32.load (i32.add (local.get $src) (local.get $i))))
        (f32.store (i32.add (local.get $dst) (local.get $i))
          (f32.demote_f64
            (f64.sub (f64.promote_f32 (local.get $x))
              (f64.mul (f64.const 0.97) (f64.promote_f32 (local.get $prev))))))
        (local.set $prev (local.get $x))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $each)))
    (local.get $prev))

  ;; One frame: the 400 pre-emphasised samples at `src` → 28 f32 at `dst` (16-byte aligned): the natural log
  ;; of each of the 26 mel bands' mean power plus 1e-2, the log of the windowed frame's mean power plus 1e-2
  ;; (as MelAnalyser), and a spare.
  (func $analyse (param $src i32) (param $dst i32)
    (local $m i32) (local $a v128) (local $b v128) (local $en v128)
    (local $g i32) (local $r i32) (local $o i32)
    (local $x0r f32) (local $x0i f32) (local $x1r f32) (local $x1i f32)
    (local $x2r f32) (local $x2i f32) (local $x3r f32) (local $x3i f32)
    (local $a0r f32) (local $a0i f32) (local $a1r f32) (local $a1i f32)
    (local $a2r f32) (local $a2i f32) (local $a3r f32) (local $a3i f32)
    (local $h i32) (local $t i32) (local $i i32) (local $j i32) (local $pa i32) (local $pb i32)
    (local $ar v128) (local $ai v128) (local $br v128) (local $bi v128) (local $wr v128) (local $wi v128)
    (local $xr v128) (local $xi v128) (local $er v128) (local $ei v128) (local $or v128) (local $oi v128)
    (local $half v128) (local $first i32) (local $len i32) (local $w i32) (local $acc v128)
    ;; 1. Window; the even samples are the real parts, the odd ones the imaginary parts (z[n] = x[2n] +
    ;;    i·x[2n+1]); the frame's power.
    (local.set $en (v128.const f32x4 0 0 0 0))
    (loop $win
      (local.set $a
        (f32x4.mul (v128.load (i32.add (local.get $src) (local.get $m)))
          (v128.load (i32.add (global.get $win) (local.get $m)))))
      (local.set $b
        (f32x4.mul (v128.load offset=16 (i32.add (local.get $src) (local.get $m)))
          (v128.load offset=16 (i32.add (global.get $win) (local.get $m)))))
      (local.set $en
        (f32x4.add (local.get $en)
          (f32x4.add (f32x4.mul (local.get $a) (local.get $a)) (f32x4.mul (local.get $b) (local.get $b)))))
      (v128.store (i32.add (global.get $wre) (i32.shr_u (local.get $m) (i32.const 1)))
        (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a) (local.get $b)))
      (v128.store (i32.add (global.get $wim) (i32.shr_u (local.get $m) (i32.const 1)))
        (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a) (local.get $b)))
      (local.set $m (i32.add (local.get $m) (i32.const 32)))
      (br_if $win (i32.lt_u (local.get $m) (i32.const 1600))))
    ;; 2. Bit-reversed order and the first two stages (lengths 2 and 4: twiddles 1 and −i), four points at a
    ;;    time.
    (loop $quads
      (local.set $r (i32.add (global.get $rev) (local.get $g)))
      (local.set $o (i32.load (local.get $r)))
      (local.set $x0r (f32.load (i32.add (global.get $wre) (local.get $o))))
      (local.set $x0i (f32.load (i32.add (global.get $wim) (local.get $o))))
      (local.set $o (i32.load offset=4 (local.get $r)))
      (local.set $x1r (f32.load (i32.add (global.get $wre) (local.get $o))))
      (local.set $x1i (f32.load (i32.add (global.get $wim) (local.get $o))))
      (local.set $o (i32.load offset=8 (local.get $r)))
      (local.set $x2r (f32.load (i32.add (global.get $wre) (local.get $o))))
      (local.set $x2i (f32.load (i32.add (global.get $wim) (local.get $o))))
      (local.set $o (i32.load offset=12 (local.get $r)))
      (local.set $x3r (f32.load (i32.add (global.get $wre) (local.get $o))))
      (local.set $x3i (f32.load (i32.add (global.get $wim) (local.get $o))))
      (local.set $a0r (f32.add (local.get $x0r) (local.get $x1r)))
      (local.set $a0i (f32.add (local.get $x0i) (local.get $x1i)))
      (local.set $a1r (f32.sub (local.get $x0r) (local.get $x1r)))
      (local.set $a1i (f32.sub (local.get $x0i) (local.get $x1i)))
      (local.set $a2r (f32.add (local.get $x2r) (local.get $x3r)))
      (local.set $a2i (f32.add (local.get $x2i) (local.get $x3i)))
      (local.set $a3r (f32.sub (local.get $x2r) (local.get $x3r)))
      (local.set $a3i (f32.sub (local.get $x2i) (local.get $x3i)))
      (local.set $o (i32.add (global.get $re) (local.get $g)))
      (f32.store (local.get $o) (f32.add (local.get $a0r) (local.get $a2r)))
      (f32.store offset=4 (local.get $o) (f32.add (local.get $a1r) (local.get $a3i)))
      (f32.store offset=8 (local.get $o) (f32.sub (local.get $a0r) (local.get $a2r)))
      (f32.store offset=12 (local.get $o) (f32.sub (local.get $a1r) (local.get $a3i)))
      (local.set $o (i32.add (global.get $im) (local.get $g)))
      (f32.store (local.get $o) (f32.add (local.get $a0i) (local.get $a2i)))
      (f32.store offset=4 (local.get $o) (f32.sub (local.get $a1i) (local.get $a3r)))
      (f32.store offset=8 (local.get $o) (f32.sub (local.get $a0i) (local.get $a2i)))
      (f32.store offset=12 (local.get $o) (f32.add (local.get $a1i) (local.get $a3r)))
      (local.set $g (i32.add (local.get $g) (i32.const 16)))
      (br_if $quads (i32.lt_u (local.get $g) (i32.const 1024))))
    ;; 3. The other stages, four butterflies at a time ($h: half the length, in bytes; $t: its twiddles).
    (local.set $h (i32.const 16))
    (local.set $t (global.get $tw))
    (loop $stages
      (local.set $i (i32.const 0))
      (loop $blocks
        (local.set $j (i32.const 0))
        (loop $flies
          (local.set $pa (i32.add (local.get $i) (local.get $j)))
          (local.set $pb (i32.add (local.get $pa) (local.get $h)))
          (local.set $ar (v128.load (i32.add (global.get $re) (local.get $pa))))
          (local.set $ai (v128.load (i32.add (global.get $im) (local.get $pa))))
          (local.set $br (v128.load (i32.add (global.get $re) (local.get $pb))))
          (local.set $bi (v128.load (i32.add (global.get $im) (local.get $pb))))
          (local.set $wr (v128.load (i32.add (local.get $t) (local.get $j))))
          (local.set $wi (v128.load (i32.add (i32.add (local.get $t) (local.get $h)) (local.get $j))))
          (local.set $xr
            (f32x4.sub (f32x4.mul (local.get $br) (local.get $wr)) (f32x4.mul (local.get $bi) (local.get $wi))))
          (local.set $xi
            (f32x4.add (f32x4.mul (local.get $br) (local.get $wi)) (f32x4.mul (local.get $bi) (local.get $wr))))
          (v128.store (i32.add (global.get $re) (local.get $pb)) (f32x4.sub (local.get $ar) (local.get $xr)))
          (v128.store (i32.add (global.get $im) (local.get $pb)) (f32x4.sub (local.get $ai) (local.get $xi)))
          (v128.store (i32.add (global.get $re) (local.get $pa)) (f32x4.add (local.get $ar) (local.get $xr)))
          (v128.store (i32.add (global.get $im) (local.get $pa)) (f32x4.add (local.get $ai) (local.get $xi)))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br_if $flies (i32.lt_u (local.get $j) (local.get $h))))
        (local.set $i (i32.add (local.get $i) (i32.shl (local.get $h) (i32.const 1))))
        (br_if $blocks (i32.lt_u (local.get $i) (i32.const 1024))))
      (local.set $t (i32.add (local.get $t) (i32.shl (local.get $h) (i32.const 1))))
      (local.set $h (i32.shl (local.get $h) (i32.const 1)))
      (br_if $stages (i32.lt_u (local.get $h) (i32.const 1024))))
    ;; 4. The 512-point real spectrum's power, bins 0…255 (the mel filters end below bin 256):
    ;;    X[k] = E[k] + W^k·O[k] with E, O from Z[k] and Z[256 − k] (Z[256] = Z[0]).
    (f32.store offset=1024 (global.get $re) (f32.load (global.get $re)))
    (f32.store offset=1024 (global.get $im) (f32.load (global.get $im)))
    (local.set $half (v128.const f32x4 0.5 0.5 0.5 0.5))
    (local.set $m (i32.const 0))
    (loop $bins
      (local.set $ar (v128.load (i32.add (global.get $re) (local.get $m))))
      (local.set $ai (v128.load (i32.add (global.get $im) (local.get $m))))
      ;; Z[256 − k − 3 … 256 − k], reversed.
      (local.set $br
        (i8x16.shuffle 12 13 14 15 8 9 10 11 4 5 6 7 0 1 2 3
          (v128.load (i32.add (global.get $re) (i32.sub (i32.const 1012) (local.get $m))))
          (v128.const i32x4 0 0 0 0)))
      (local.set $bi
        (i8x16.shuffle 12 13 14 15 8 9 10 11 4 5 6 7 0 1 2 3
          (v128.load (i32.add (global.get $im) (i32.sub (i32.const 1012) (local.get $m))))
          (v128.const i32x4 0 0 0 0)))
      (local.set $er (f32x4.mul (f32x4.add (local.get $ar) (local.get $br)) (local.get $half)))
      (local.set $ei (f32x4.mul (f32x4.sub (local.get $ai) (local.get $bi)) (local.get $half)))
      (local.set $or (f32x4.mul (f32x4.add (local.get $ai) (local.get $bi)) (local.get $half)))
      (local.set $oi (f32x4.mul (f32x4.sub (local.get $br) (local.get $ar)) (local.get $half)))
      (local.set $wr (v128.load (i32.add (global.get $pc) (local.get $m))))
      (local.set $wi (v128.load (i32.add (global.get $ps) (local.get $m))))
      (local.set $xr
        (f32x4.sub (f32x4.add (local.get $er) (f32x4.mul (local.get $wr) (local.get $or)))
          (f32x4.mul (local.get $wi) (local.get $oi))))
      (local.set $xi
        (f32x4.add (f32x4.add (local.get $ei) (f32x4.mul (local.get $wr) (local.get $oi)))
          (f32x4.mul (local.get $wi) (local.get $or))))
      (v128.store (i32.add (global.get $pow) (local.get $m))
        (f32x4.mul
          (f32x4.add (f32x4.mul (local.get $xr) (local.get $xr)) (f32x4.mul (local.get $xi) (local.get $xi)))
          (v128.const f32x4 0.001953125 0.001953125 0.001953125 0.001953125)))
      (local.set $m (i32.add (local.get $m) (i32.const 16)))
      (br_if $bins (i32.lt_u (local.get $m) (i32.const 1024))))
    ;; 5. The mel bands (weights zero-padded to a multiple of four), and the frame's power.
    (local.set $g (i32.const 0))
    (loop $bands
      (local.set $r (i32.add (global.get $melb) (local.get $g)))
      (local.set $first (i32.add (global.get $pow) (i32.load (local.get $r))))
      (local.set $len (i32.load offset=4 (local.get $r)))
      (local.set $w (i32.load offset=8 (local.get $r)))
      (local.set $acc (v128.const f32x4 0 0 0 0))
      (local.set $i (i32.const 0))
      (loop $weights
        (local.set $acc
          (f32x4.add (local.get $acc)
            (f32x4.mul (v128.load (i32.add (local.get $first) (local.get $i)))
              (v128.load (i32.add (local.get $w) (local.get $i))))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br_if $weights (i32.lt_u (local.get $i) (local.get $len))))
      (f32.store (i32.add (local.get $dst) (i32.shr_u (local.get $g) (i32.const 2))) (call $hsum (local.get $acc)))
      (local.set $g (i32.add (local.get $g) (i32.const 16)))
      (br_if $bands (i32.lt_u (local.get $g) (i32.const 416))))
    (f32.store offset=104 (local.get $dst) (f32.div (call $hsum (local.get $en)) (f32.const 400)))
    (f32.store offset=108 (local.get $dst) (f32.const 0))
    ;; The logs, four at a time.
    (local.set $m (i32.const 0))
    (loop $logs
      (local.set $o (i32.add (local.get $dst) (local.get $m)))
      (v128.store (local.get $o)
        (call $log4 (f32x4.add (v128.load (local.get $o)) (v128.const f32x4 0.01 0.01 0.01 0.01))))
      (local.set $m (i32.add (local.get $m) (i32.const 16)))
      (br_if $logs (i32.lt_u (local.get $m) (i32.const 112)))))

  ;; Analyses every complete frame of the `len` pre-emphasised samples at `buf` (frame f at sample 160·f,
  ;; 400 long): 28 f32 per frame at `dst` (see $analyse). Returns the frames analysed.
  (func (export "frames") (param $buf i32) (param $len i32) (param $dst i32) (result i32)
    (local $start i32) (local $n i32)
    (block $done
      (loop $each
        (br_if $done (i32.gt_s (i32.add (local.get $start) (i32.const 400)) (local.get $len)))
        (call $analyse
          (i32.add (local.get $buf) (i32.shl (local.get $start) (i32.const 2)))
          (i32.add (local.get $dst) (i32.mul (local.get $n) (i32.const 112))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (local.set $start (i32.add (local.get $start) (i32.const 160)))
        (br $each)))
    (local.get $n))
)
