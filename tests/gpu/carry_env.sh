# Sourced by the GPU scripts (overhead.sh, launch_cost.sh): the environment
# for running carried programs on the GPU machine. Sets up MPI-as-root and
# torch.distributed defaults, and puts the carried shared libraries the
# machine lacks (CARRY/lib) on LD_LIBRARY_PATH through WORK/lib.
#
# usage: . tests/gpu/carry_env.sh; hm_carry_env CARRY WORK
hm_carry_env() {
    local carry=$1 work=$2 f
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MASTER_ADDR=127.0.0.1 PYTHONUNBUFFERED=1
    mkdir -p "$work/lib"
    for f in "$carry"/lib/*; do
        [ -e "$f" ] || continue
        ldconfig -p | grep -q "$(basename "$f")" || cp "$f" "$work/lib/"
    done
    export LD_LIBRARY_PATH=$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

# The start of a device script: sets C (the carry), O (the output folder,
# made), R (O/results.txt), W (a fresh work folder under /tmp named after
# TAG, with hm_carry_env's environment) and H (the carried htamerge).
#
# usage: hm_proof_setup CARRY OUT TAG
hm_proof_setup() {
    C=$(realpath "$1")
    O=$(realpath "$2")
    mkdir -p "$O"
    R=$O/results.txt
    W=$(mktemp -d "/tmp/$3.XXXX")
    hm_carry_env "$C" "$W"
    H=$C/htamerge
}
