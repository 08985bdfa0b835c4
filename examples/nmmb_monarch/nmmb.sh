#!/usr/bin/env bash
# NMMB-MONARCH, the original-style sequential driver: every binary one after
# the other, step by step, as the operational BASH script does.
#
#   nmmb.sh [CONFIG] [OUTDIR]
#     CONFIG  namelist-style config (default: config/default.nml)
#     OUTDIR  run directory (default: ./nmmb_run_bash)
# Environment: NEMS_NODES, NEMS_CUS_PER_NODE (model ranks = their product;
# defaults 1 and 2), MPIRUN (default mpirun), PYTHON (default python3),
# NMMB_BIN (default: bin/ beside this script; build it with make).
# Writes OUTDIR/bash_times.tsv: step, day, binary, seconds (for benchmarks).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CFG=$(realpath "${1:-$HERE/config/default.nml}")
OUT=$(realpath -m "${2:-$PWD/nmmb_run_bash}")
BIN=${NMMB_BIN:-$HERE/bin}
PY=${PYTHON:-python3}
MPIRUN=${MPIRUN:-mpirun}
NEMS_NODES=${NEMS_NODES:-1}
NEMS_CUS_PER_NODE=${NEMS_CUS_PER_NODE:-2}
NP=$((NEMS_NODES * NEMS_CUS_PER_NODE))

[ -x "$BIN/umo_model" ] || { echo "nmmb.sh: $BIN/umo_model missing: run make -C $HERE" >&2; exit 2; }
MPIFLAGS=()
if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
  # only when there are more ranks than cores: oversubscribed ranks yield when idle
  if [ "$NP" -gt "$(nproc)" ]; then MPIFLAGS+=(--oversubscribe); fi
  if [ "$(id -u)" = 0 ]; then MPIFLAGS+=(--allow-run-as-root); fi
fi

mkdir -p "$OUT/fixed" "$OUT/figures"
TIMES=$OUT/bash_times.tsv
printf "step\tday\tbinary\tseconds\n" > "$TIMES"
now() { local t=${EPOCHREALTIME/[.,]/}; echo "$t"; }          # microseconds (bash 5)
secs() { printf "%d.%06d" $(($1 / 1000000)) $(($1 % 1000000)); }
# run STEP DAY NAME CMD...: run one program, record its duration
run() {
  local step=$1 day=$2 name=$3 t0 t1; shift 3
  t0=$(now)
  "$@"
  t1=$(now)
  printf "%s\t%s\t%s\t%s\n" "$step" "$day" "$name" "$(secs $((t1 - t0)))" >> "$TIMES"
}
declare -A STEP_T
step_begin() { STEP_T[$1]=$(now); }
step_end() { printf "nmmb.sh: %-15s %10s s\n" "$1" "$(secs $(($(now) - ${STEP_T[$1]})))"; }
T0=$(now)

# 1. Initialization
step_begin Initialization
NML=$OUT/namelist.nml
run Initialization 0 init "$BIN/init" "$CFG" "$NML" "$OUT/seamask.txt" "$OUT/gfs.txt" "$OUT/restart_00.txt"
DAYS=$(sed -n 's/^ *days *= *\([0-9]*\).*/\1/p' "$NML")
step_end Initialization

# 2. Fixed: independent programs, each reads the seamask
step_begin Fixed
for prog in smmount landuse deeptemperature roughness albedo snowalbedo vegfrac soiltype \
            stdh dust_source seaice gfdlco2 lookup_aerosol; do
  run Fixed 0 "$prog" "$BIN/$prog" "$NML" "$OUT/seamask.txt" "$OUT/fixed/$prog.txt"
done
step_end Fixed

for ((d = 1; d <= DAYS; d++)); do
  D=$(printf "%02d" "$d"); P=$(printf "%02d" $((d - 1)))
  DIR=$OUT/day$D; mkdir -p "$DIR"
  if [ "$d" = 1 ]; then RESTART_IN=$OUT/restart_00.txt; else RESTART_IN=$OUT/day$P/restart.txt; fi

  # 3. Variable: degrib, then winds and soil, then the model input
  step_begin "Variable day$D"
  run Variable "$d" degrib "$BIN/degrib" "$NML" "$OUT/gfs.txt" "$d" "$DIR/degrib.txt"
  run Variable "$d" prep_winds "$BIN/prep_winds" "$NML" "$DIR/degrib.txt" "$OUT/fixed/smmount.txt" "$DIR/winds.txt"
  run Variable "$d" prep_soil "$BIN/prep_soil" "$NML" "$DIR/degrib.txt" "$OUT/fixed/soiltype.txt" \
      "$OUT/fixed/vegfrac.txt" "$DIR/soil.txt"
  run Variable "$d" prep_bc "$BIN/prep_bc" "$NML" "$DIR/winds.txt" "$DIR/soil.txt" "$DIR/input.txt"
  step_end "Variable day$D"

  # 4. UMO model: MPI, restarts from the previous day
  step_begin "Model day$D"
  run Model "$d" umo_model "$MPIRUN" "${MPIFLAGS[@]}" -n "$NP" "$BIN/umo_model" "$NML" "$d" \
      "$OUT/seamask.txt" "$OUT/fixed/dust_source.txt" "$OUT/fixed/roughness.txt" "$DIR/input.txt" \
      "$RESTART_IN" "$DIR/history.txt" "$DIR/restart.txt" > "$DIR/umo_model.out" 2> "$DIR/umo_model.err"
  step_end "Model day$D"

  # 5. Post-process: regrid, then diagnostics
  step_begin "Post day$D"
  run Post "$d" post_regrid "$BIN/post_regrid" "$NML" "$DIR/history.txt" "$DIR/regrid.txt"
  run Post "$d" post_diag "$BIN/post_diag" "$NML" "$DIR/regrid.txt" "$OUT/fixed/lookup_aerosol.txt" "$DIR/diag.txt"
  step_end "Post day$D"
done

# 6. Figures and the animation
step_begin Figures
DIAGS=()
for ((d = 1; d <= DAYS; d++)); do
  DIAGS+=("$OUT/day$(printf "%02d" "$d")/diag.txt")
done
for ((d = 1; d <= DAYS; d++)); do     # one colour scale, from every day's values
  D=$(printf "%02d" "$d")
  run Figures "$d" plot_day "$PY" "$HERE/figures.py" day "$OUT/day$D/diag.txt" "$OUT/figures/aod_day$D.png" "$d" "${DIAGS[@]}"
done
run Figures 0 animate "$PY" "$HERE/figures.py" anim "$OUT/figures/aod.gif" "${DIAGS[@]}"
step_end Figures
printf "nmmb.sh: %-15s %10s s\n" total "$(secs $(($(now) - T0)))"
echo "nmmb.sh: figures in $OUT/figures, model logs in $OUT/day*/umo_model.{out,err}"
