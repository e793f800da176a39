#compdef sbx
# zsh completion for sbx. Installed as share/zsh/vendor-completions/_sbx
# (see CMakeLists.txt install()). One function _sbx_CMD per subcommand, with
# the options `sbx CMD --help` lists; tests/integration/test_cli_docs.sh checks they agree.

__sbx_images() {
  local -a imgs
  imgs=(${(f)"$(_call_program images sbx --root ${(q)_sbx_root} images 2>/dev/null | awk 'NR > 1 && $1 != "<none>" {print $1; print $1 ":" $2}')"})
  _describe -t images image imgs
}
__sbx_sandboxes() {
  local -a ids
  ids=(${="$(_call_program sandboxes sbx --root ${(q)_sbx_root} --run-root ${(q)_sbx_run_root} ps -a --format "'{{.ID}} {{.Names}}'" 2>/dev/null)"})
  _describe -t sandboxes sandbox ids "$@"
}
__sbx_snapshot_names() {
  local -a names
  names=(${(f)"$(_call_program snapshots sbx --root ${(q)_sbx_root} snapshots 2>/dev/null | awk 'NR > 1 {print $1}')"})
  _describe -t snapshots snapshot names
}
# cp's SANDBOX:PATH or a host path.
__sbx_cp_path() {
  _alternative 'files:host path:_files' 'sandboxes:sandbox:__sbx_sandboxes -S :'
}

_sbx() {
  local _sbx_root=${SBX_ROOT:-/var/lib/sbx} _sbx_run_root=${SBX_RUN_ROOT:-/run/sbx}
  typeset -A opt_args
  local curcontext="$curcontext" state line ret=1
  _arguments -C -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(- *)'{-v,--version}'[Print the version and exit]' \
    '--root[Image store directory]:file:_files' \
    '--run-root[Directory for live sandbox state]:file:_files' \
    '--log-level[Log level]:value:(trace debug info warn error off)' \
    '1: :->command' \
    '*:: :->args' && ret=0
  case $state in
    command)
      local -a commands=(
        'import:Import an OCI image layout dir, oci-archive or docker-archive into'
        'images:List images in the store'
        'tag:Give an image another name'
        'rmi:Remove images'
        'run:Run a command in a new, throw-away sandbox'
        'info:Show what this host offers'
        'gc:Remove leftovers of killed sandboxes, unreferenced image blobs and'
        'serve:Serve the Docker Engine API (docker, docker-py, dockerode) on a socket'
        'create:Start a long-lived sandbox in the background and print its id'
        'exec:Run a command in a running sandbox'
        'ps:List sandboxes'
        'list:List sandboxes'
        'inspect:Show everything about sandboxes or images'
        'wait:Wait for sandboxes to end'
        'stop:Stop sandboxes: SIGTERM, then SIGKILL after --time'
        'kill:Send a signal to sandboxes'
        'rm:Remove sandboxes'
        'rename:Rename a sandbox'
        'logs:Print the output of a sandbox'\''s first process'
        'cp:Copy files between a running sandbox and the host'
        'snapshot:Save a sandbox'\''s file system changes as a new image'
        'export:Write an image'
        'snapshot-dir:Save one directory of a sandbox as a content-addressed snapshot'
        'snapshots:List snapshots of every kind'
        'checkpoint:Save a running sandbox'\''s memory and file system'
        'restore:Start sandboxes that continue from a memory snapshot'
        'pull:Pull an image from a registry into the store'
        'push:Push an image of the store'
        'login:Log in to a registry'
        'logout:Remove a registry'\''s credentials from the auth file'
        'stats:Show live resource usage of running sandboxes'
        'batch:Run many tasks (JSON lines), each in its own throw-away sandbox'
        'system:Host-wide settings for sbx'
        'build:Build an image from a Dockerfile'
        'history:Show the history of an image'
        'image:Image maintenance'
        'network:Manage user-defined networks'
        'trajectory:Show or export a recorded sandbox'\''s trajectory'
        'branch:New sandboxes with the files of a recorded step'
        'replay:Run a recorded trajectory again and say where it diverges'
        'volume:Manage named volumes'
      )
      _describe -t commands 'sbx command' commands && ret=0 ;;
    args)
      [[ -n ${opt_args[--root]} ]] && _sbx_root=${opt_args[--root]}
      [[ -n ${opt_args[--run-root]} ]] && _sbx_run_root=${opt_args[--run-root]}
      local cmd=${words[1]}
      [[ $cmd == list ]] && cmd=ps
      curcontext="${curcontext%:*:*}:sbx-$cmd:"
      (( $+functions[_sbx_${cmd//-/_}] )) && _sbx_${cmd//-/_} && ret=0 ;;
  esac
  return ret
}
_sbx_import() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-q --quiet)'{-q,--quiet}'[No progress output]' \
    '1:image layout or archive:_files' \
    '2:name: '
}
_sbx_images() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--json[Print JSON]' \
    '(-q --quiet)'{-q,--quiet}'[Print image ids only]'
}
_sbx_tag() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '1:image:__sbx_images' \
    '2:new name: '
}
_sbx_rmi() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-f --force)'{-f,--force}'[Remove even when a sandbox uses the image]' \
    '*:image:__sbx_images'
}
_sbx_run() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '*'{-e,--env}'[Set an environment variable]:value: ' \
    '*--env-file[Read environment variables from a file]:file:_files' \
    '(-w --workdir)'{-w,--workdir}'[Working directory inside the sandbox]:value: ' \
    '(-u --user)'{-u,--user}'[User: NAME|UID:GROUP|GID, resolved in the image'\''s /etc/passwd]:value: ' \
    '*'{-v,--volume}'[Bind mount HOST-DIR:CONTAINER-DIR:OPTS]:file:_files' \
    '*--mount[Mount type=volume|bind|tmpfs,source=NAME|HOST-DIR,target=CONTAINER-DIR,readonly]:value: ' \
    '*--tmpfs[Mount a tmpfs: PATH:size=64m,mode=1777,exec]:value: ' \
    '--read-only[Mount the root file system read-only]' \
    '--hostname[Host name inside the sandbox]:value: ' \
    '*'{--network,--net}'[Network: none (only loopback, the default), host, private (own veth, NAT, egress rules), or user-defined networks]:network:__sbx_networks' \
    '*--network-alias[On a user-defined network: another name for the sandbox on its DNS]:value: ' \
    '--ip[On a user-defined network: its IPv4 address there]:value: ' \
    '*--allow-egress[With --network private: allow only this IP, CIDR, DOMAIN or *.DOMAIN]:value: ' \
    '*--deny-egress[With --network private: refuse this IP or CIDR]:value: ' \
    '*'{-p,--publish}'[With --network private: publish HOST_IP:HOST_PORT:CONTAINER_PORT/tcp|udp]:value: ' \
    '*--dns[With --network private: a DNS server for /etc/resolv.conf]:value: ' \
    '*--add-host[With --network private: add NAME:IP to /etc/hosts]:value: ' \
    '--userns[User namespace: auto (a per-sandbox host id range, the default) or host]:value:(auto host)' \
    '(-m --memory)'{-m,--memory}'[Memory limit]:value: ' \
    '--disk[Limit the writable layer]:value: ' \
    '--cpus[CPU limit, in CPUs]:value: ' \
    '--pids-limit[Most processes in the sandbox]:value: ' \
    '*--ulimit[rlimit NAME=SOFT:HARD, e.g. nofile=1024:2048]:value: ' \
    '--timeout[Kill the sandbox after this long]:value: ' \
    '--rootfs[Use DIR as the read-only, overlaid root instead of an image]:file:_files' \
    '--entrypoint[Override the image'\''s Entrypoint]:value: ' \
    '--name[A name for the sandbox]:value: ' \
    '--runtime[Runtime: native (namespaces, the default) or gvisor (runsc)]:value:(native gvisor)' \
    '--pull[Pull the image: missing, always, never or newer]:value:(missing always never newer)' \
    '--runsc[Path to runsc for --runtime gvisor]:file:_files' \
    '*--mount-snapshot[Mount a writable copy of directory snapshot NAME at TARGET]:value: ' \
    '(-i --interactive)'{-i,--interactive}'[Keep stdin open]' \
    '(-t --tty)'{-t,--tty}'[Allocate a pseudo-terminal]' \
    '--gpus[NVIDIA GPUs to give the sandbox]:value:(all)' \
    '*--device[Add a device]:value: ' \
    '--end-record[Write how the sandbox ended as JSON to FILE]:file:_files' \
    '--rm[Accepted for docker compatibility]' \
    '1:image:__sbx_images' \
    '*::command:_normal'
}
_sbx_info() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--json[Print JSON]' \
    '--runsc[Path to the runsc to describe]:file:_files'
}
_sbx_gc() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--older-than[Also remove snapshots]:value: '
}
_sbx_serve() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--socket[Unix socket to listen on]:file:_files' \
    '--tcp[Also listen on loopback TCP ADDR\:PORT (needs --token-file)]:value: ' \
    '--token-file[File with the bearer token TCP clients must send]:file:_files' \
    '--e2b[Also serve an E2B-compatible API on loopback ADDR\:PORT (needs --token-file)]:value: ' \
    '--sandbox-fusion[Also serve a SandboxFusion-compatible API on ADDR\:PORT]:value: ' \
    '--languages[SandboxFusion languages table (JSON) over the defaults]:file:_files' \
    '--trajectory-dir[Let /sbx/v1/trajectories read trajectory files by path under DIR]:directory:_files -/' \
    '--max-concurrency[SandboxFusion sandboxes running at once]:value: ' \
    '--queue-timeout[Most wait of a SandboxFusion request for a slot; then 504]:value: ' \
    '--runtime[Runtime of containers that name none]:runtime:(native gvisor)' \
    '--max-connections[Most connections open at once on each listener]:value: ' \
    '--max-client-connections[Most connections open at once from one client on each listener]:value: ' \
    '--header-timeout[Most time a request head may take]:value: ' \
    '--idle-timeout[Most time without a byte from a client (streams exempt)]:value: '
}
_sbx_create() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '*'{-e,--env}'[Set an environment variable]:value: ' \
    '*--env-file[Read environment variables from a file]:file:_files' \
    '(-w --workdir)'{-w,--workdir}'[Working directory inside the sandbox]:value: ' \
    '(-u --user)'{-u,--user}'[User: NAME|UID:GROUP|GID, resolved in the image'\''s /etc/passwd]:value: ' \
    '*'{-v,--volume}'[Bind mount HOST-DIR:CONTAINER-DIR:OPTS]:file:_files' \
    '*--mount[Mount type=volume|bind|tmpfs,source=NAME|HOST-DIR,target=CONTAINER-DIR,readonly]:value: ' \
    '*--tmpfs[Mount a tmpfs: PATH:size=64m,mode=1777,exec]:value: ' \
    '--read-only[Mount the root file system read-only]' \
    '--hostname[Host name inside the sandbox]:value: ' \
    '*'{--network,--net}'[Network: none (only loopback, the default), host, private (own veth, NAT, egress rules), or user-defined networks]:network:__sbx_networks' \
    '*--network-alias[On a user-defined network: another name for the sandbox on its DNS]:value: ' \
    '--ip[On a user-defined network: its IPv4 address there]:value: ' \
    '*--allow-egress[With --network private: allow only this IP, CIDR, DOMAIN or *.DOMAIN]:value: ' \
    '*--deny-egress[With --network private: refuse this IP or CIDR]:value: ' \
    '*'{-p,--publish}'[With --network private: publish HOST_IP:HOST_PORT:CONTAINER_PORT/tcp|udp]:value: ' \
    '*--dns[With --network private: a DNS server for /etc/resolv.conf]:value: ' \
    '*--add-host[With --network private: add NAME:IP to /etc/hosts]:value: ' \
    '--userns[User namespace: auto (a per-sandbox host id range, the default) or host]:value:(auto host)' \
    '(-m --memory)'{-m,--memory}'[Memory limit]:value: ' \
    '--disk[Limit the writable layer]:value: ' \
    '--cpus[CPU limit, in CPUs]:value: ' \
    '--pids-limit[Most processes in the sandbox]:value: ' \
    '*--ulimit[rlimit NAME=SOFT:HARD, e.g. nofile=1024:2048]:value: ' \
    '--timeout[End the sandbox after this long]:value: ' \
    '--rootfs[Use DIR as the read-only, overlaid root instead of an image]:file:_files' \
    '--entrypoint[Override the image'\''s Entrypoint]:value: ' \
    '--name[A name for the sandbox]:value: ' \
    '--runtime[Runtime: native (namespaces, the default) or gvisor (runsc)]:value:(native gvisor)' \
    '--pull[Pull the image: missing, always, never or newer]:value:(missing always never newer)' \
    '--runsc[Path to runsc for --runtime gvisor]:file:_files' \
    '*--mount-snapshot[Mount a writable copy of directory snapshot NAME at TARGET]:value: ' \
    '--gpus[NVIDIA GPUs to give the sandbox]:value:(all)' \
    '*--device[Add a device]:value: ' \
    '--idle-timeout[End the sandbox after this long without an exec]:value: ' \
    '*'{-l,--label}'[A label KEY=VALUE]:value: ' \
    '--record[Keep a trajectory of every exec, cp and snapshot]' \
    '*--redact[With --record: store this env NAME (or REGEX; stdin) as a digest only]:value: ' \
    '(--no-timens)--timens[Monotonic and boot clocks that start at 0 (a time namespace; default with --record)]' \
    '(--timens)--no-timens[The host'\''s monotonic and boot clocks, also with --record]' \
    '1:image:__sbx_images' \
    '*::command:_normal'
}
_sbx_exec() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '*'{-e,--env}'[Set an environment variable KEY=VALUE]:value: ' \
    '(-w --workdir)'{-w,--workdir}'[Working directory inside the sandbox]:value: ' \
    '(-u --user)'{-u,--user}'[User: NAME|UID:GROUP|GID]:value: ' \
    '--timeout[Kill the command after this long]:value: ' \
    '(-i --interactive)'{-i,--interactive}'[Keep stdin open]' \
    '(-t --tty)'{-t,--tty}'[Allocate a pseudo-terminal]' \
    '1:sandbox:__sbx_sandboxes' \
    '*::command:_normal'
}
_sbx_ps() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-a --all)'{-a,--all}'[Show every sandbox, not only running ones]' \
    '(-q --quiet)'{-q,--quiet}'[Print ids only]' \
    '--json[Print JSON]' \
    '--no-trunc[Print full ids]' \
    '*'{-f,--filter}'[label=KEY=VALUE, name=NAME, status=STATUS, id=PREFIX]:value: ' \
    '--format[json or a template of {{.Field}}s]:value: '
}
_sbx_inspect() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--json[Print JSON]' \
    '*:image or sandbox:_alternative images\:image\:__sbx_images sandboxes\:sandbox\:__sbx_sandboxes'
}
_sbx_wait() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '*:sandbox:__sbx_sandboxes'
}
_sbx_stop() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-t --time)'{-t,--time}'[Seconds to wait before SIGKILL]:value: ' \
    '*:sandbox:__sbx_sandboxes'
}
_sbx_kill() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-s --signal)'{-s,--signal}'[Signal name or number]:value:(TERM KILL INT HUP QUIT USR1 USR2 STOP CONT)' \
    '*:sandbox:__sbx_sandboxes'
}
_sbx_rename() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '1:sandbox:__sbx_sandboxes' \
    '2:new name: '
}
_sbx_rm() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-f --force)'{-f,--force}'[Kill running sandboxes first]' \
    '(-v --volumes)'{-v,--volumes}'[Also remove their anonymous volumes]' \
    '(-a --all)'{-a,--all}'[Remove every sandbox]' \
    '*--filter[label=KEY=VALUE, name=, status=, id=]:value: ' \
    '*:sandbox:__sbx_sandboxes'
}
_sbx_logs() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-f --follow)'{-f,--follow}'[Keep printing until the sandbox ends]' \
    '1:sandbox:__sbx_sandboxes'
}
_sbx_cp() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '1:source:__sbx_cp_path' \
    '2:destination:__sbx_cp_path'
}
_sbx_snapshot() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--name[Name for the new image]:value: ' \
    '--upper[Instead of a sandbox]:file:_files' \
    '--image[... on top of this image]:image:__sbx_images' \
    '1:sandbox:__sbx_sandboxes'
}
_sbx_export() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-o --output)'{-o,--output}'[Archive file to write]:file:_files' \
    '--format[oci-archive or docker-archive]:value:(oci-archive docker-archive)' \
    '--name[Name to record in the archive]:value: ' \
    '--json[Print JSON]' \
    '1:image:__sbx_images'
}
_sbx_snapshot_dir() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--name[Snapshot name]:value: ' \
    '--host-dir[Instead of a sandbox]:file:_files' \
    '1:sandbox:__sbx_sandboxes' \
    '2:directory in the sandbox: '
}
_sbx_snapshots() {
  local curcontext="$curcontext" state line ret=1
  _arguments -C -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--json[Print JSON]' \
    '1: :->command' \
    '*:: :->args' && ret=0
  case $state in
    command)
      local -a commands=(
        'rm:Remove snapshots'
        'extract:Extract a directory snapshot into a host directory'
        'prune:Remove snapshots not used for longer than --older-than'
      )
      _describe -t commands 'sbx command' commands && ret=0 ;;
    args)
      local sub=${words[1]}
      curcontext="${curcontext%:*:*}:sbx-snapshots-$sub:"
      (( $+functions[_sbx_snapshots_${sub}] )) && _sbx_snapshots_${sub} && ret=0 ;;
  esac
  return ret
}
_sbx_snapshots_rm() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '*:snapshot:__sbx_snapshot_names'
}
_sbx_snapshots_extract() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '1:snapshot:__sbx_snapshot_names' \
    '2:directory:_files -/'
}
_sbx_snapshots_prune() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--older-than[Age, e.g. 7d, 12h, 30m]:value: '
}
_sbx_checkpoint() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--name[Snapshot name]:value: ' \
    '--leave-running[Keep the sandbox running]' \
    '--runsc[Path to runsc]:file:_files' \
    '1:sandbox:__sbx_sandboxes'
}
_sbx_restore() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--name[Name of the new sandbox]:value: ' \
    '--count[Independent copies to start]:value: ' \
    '--runsc[Path to runsc]:file:_files' \
    '--json[Print JSON]' \
    '1:snapshot:__sbx_snapshot_names'
}
_sbx_pull() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--platform[os/arch/variant to pick from a multi-platform image]:value:(linux/amd64 linux/arm64 linux/arm/v7)' \
    '(-q --quiet)'{-q,--quiet}'[No progress output]' \
    '--json[Progress as JSON lines on stderr]' \
    '--registries-conf[registries.conf]:file:_files' \
    '--jobs[Blobs to download at once]:value: ' \
    '--tls-verify[Verify TLS certificates]:value:(true false)' \
    '--authfile[Credentials file]:file:_files' \
    '--cert-dir[Directory of HOST/ca.crt CA files]:directory:_files -/' \
    '1:image:__sbx_images'
}
_sbx_push() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-q --quiet)'{-q,--quiet}'[No progress output]' \
    '--json[Progress as JSON lines on stderr]' \
    '--tls-verify[Verify TLS certificates]:value:(true false)' \
    '--authfile[Credentials file]:file:_files' \
    '--cert-dir[Directory of HOST/ca.crt CA files]:directory:_files -/' \
    '1:image:__sbx_images' \
    '2:destination: '
}
_sbx_login() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-u --username)'{-u,--username}'[User name]:value: ' \
    '(-p --password)'{-p,--password}'[Password]:value: ' \
    '--password-stdin[Read the password from stdin]' \
    '--tls-verify[Verify TLS certificates]:value:(true false)' \
    '--authfile[Credentials file]:file:_files' \
    '--cert-dir[Directory of HOST/ca.crt CA files]:directory:_files -/' \
    '1:registry: '
}
_sbx_logout() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-a --all)'{-a,--all}'[Remove the credentials of every registry]' \
    '--authfile[Credentials file]:file:_files' \
    '1:registry: '
}
_sbx_stats() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--no-stream[Print one sample and exit]' \
    '--json[Print JSON]' \
    '--no-trunc[Print full ids]' \
    '(-a --all)'{-a,--all}'[Accepted for podman compatibility]' \
    '(-i --interval)'{-i,--interval}'[Seconds between samples]:value: ' \
    '*:sandbox:__sbx_sandboxes'
}
_sbx_batch() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-P --parallel)'{-P,--parallel}'[Sandboxes at a time]:value: ' \
    '--pool[Warm pool size per image (0\: off)]:value: ' \
    '--image[Image for tasks without an image]:image:__sbx_images' \
    '--timeout[Kill a task after this long]:value: ' \
    '(-m --memory)'{-m,--memory}'[Memory limit per task]:value: ' \
    '--network[Network]:value:(none private host)' \
    '*--allow-egress[With --network private\: allow only this IP, CIDR or domain]:value: ' \
    '*--deny-egress[With --network private\: refuse this IP or CIDR]:value: ' \
    '*--dns[With --network private\: DNS server]:value: ' \
    '*--add-host[With --network private\: add NAME\:IP to /etc/hosts]:value: ' \
    '(-o --output)'{-o,--output}'[Append result lines to FILE]:file:_files' \
    '--resume[Skip tasks that have a result in the output]' \
    '--max-output[Bytes of stdout and stderr kept per task]:value: ' \
    '--userns[User namespace]:value:(auto host)' \
    '--runtime[Backend]:value:(native gvisor)' \
    '--runsc[runsc binary]:file:_files' \
    '(-q --quiet)'{-q,--quiet}'[No progress or summary]' \
    '1:tasks file:_files'
}
_sbx_system() {
  local curcontext="$curcontext" state line ret=1
  _arguments -C -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '1: :->command' \
    '*:: :->args' && ret=0
  case $state in
    command)
      local -a commands=(
        'tune:Show or change host-wide settings that speed up sandbox starts'
        'df:Show the disk space images and the build cache take'
      )
      _describe -t commands 'sbx system command' commands && ret=0 ;;
    args)
      local sub=${words[1]}
      (( $+functions[_sbx_system_${sub}] )) && _sbx_system_${sub} && ret=0 ;;
  esac
  return ret
}
_sbx_system_tune() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--favordynmods[cgroup2 favordynmods]:value:(on off)' \
    '--json[Print JSON]'
}
_sbx_system_df() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--json[Print JSON]'
}
_sbx_build() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '*'{-t,--tag}'[Name the image NAME\:TAG]:value: ' \
    '(-f --file)'{-f,--file}'[Dockerfile]:file:_files' \
    '*--build-arg[Set a build argument KEY=VALUE]:value: ' \
    '--target[Build this stage]:value: ' \
    '--no-cache[Reuse no step from the build cache]' \
    '--pull=-[Pull base images]::value:(missing always never)' \
    '--network[Network of RUN steps]:value:(private none host)' \
    '*--label[Add a label KEY=VALUE]:value: ' \
    '*--secret[A secret id=ID,src=FILE]:value: ' \
    '--iidfile[Write the image id to FILE]:file:_files' \
    '--platform[This host'\''s platform only]:value: ' \
    '(-q --quiet)'{-q,--quiet}'[Print only the image id]' \
    '--json[Progress as JSON lines]' \
    '--rm[Accepted for docker compatibility]' \
    '1:context directory:_files -/'
}
_sbx_history() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--no-trunc[Do not shorten CREATED BY]' \
    '(-q --quiet)'{-q,--quiet}'[Print only the image id]' \
    '--json[Print JSON]' \
    '1:image:__sbx_images'
}
_sbx_image() {
  local curcontext="$curcontext" state line ret=1
  _arguments -C -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '1: :->command' \
    '*:: :->args' && ret=0
  case $state in
    command)
      local -a commands=(
        'prune:Remove the build cache and untagged images no sandbox uses'
      )
      _describe -t commands 'sbx image command' commands && ret=0 ;;
    args)
      local sub=${words[1]}
      (( $+functions[_sbx_image_${sub}] )) && _sbx_image_${sub} && ret=0 ;;
  esac
  return ret
}
_sbx_image_prune() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--build-cache[Remove only the build cache]' \
    '--json[Print JSON]'
}

__sbx_networks() {
  local -a nets
  nets=(none host private ${(f)"$(sbx network ls -q 2>/dev/null; sbx network ls 2>/dev/null | awk 'NR > 1 {print $2}')"})
  _describe -t networks 'network' nets
}
_sbx_trajectory() {
  local curcontext="$curcontext" state line ret=1
  _arguments -C -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '1: :->command' \
    '*:: :->args' && ret=0
  case $state in
    command)
      local -a commands=(
        'show:A table of the steps of a recorded sandbox or a trajectory file'
        'export:Write a recorded sandbox'\''s trajectory and its checkpoints as one tar'
      )
      _describe -t commands 'sbx trajectory command' commands && ret=0 ;;
    args)
      (( $+functions[_sbx_trajectory_${words[1]}] )) && _sbx_trajectory_${words[1]} && ret=0 ;;
  esac
  return ret
}
_sbx_trajectory_show() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--json[Print the header and the steps as JSON]' \
    '1:sandbox or file:_files'
}
_sbx_trajectory_export() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-o --output)'{-o,--output}'[The archive to write]:file:_files' \
    '1:sandbox: '
}
_sbx_branch() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--at[The step whose resulting files the sandboxes get]:value: ' \
    '--count[How many sandboxes]:value: ' \
    '--name[Name them PREFIX or PREFIX-1, PREFIX-2, ...]:value: ' \
    '1:sandbox or file:_files'
}
_sbx_replay() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--image[Run it on this image instead of the recorded one]:image:__sbx_images' \
    '--until[The last step to replay]:value: ' \
    '--keep[Keep the replay'\''s sandbox]' \
    '*--tolerate-regex[Do not compare stdout/stderr lines matching this regex]:value: ' \
    '*--tolerate-path[Do not compare changed files whose path matches this regex]:value: ' \
    '--json[Print the steps as JSON lines]' \
    '1:file:_files'
}
_sbx_network() {
  local curcontext="$curcontext" state line ret=1
  _arguments -C -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '1: :->command' \
    '*:: :->args' && ret=0
  case $state in
    command)
      local -a commands=(
        'create:Create a network'
        'ls:List networks'
        'list:List networks'
        'inspect:Show networks as JSON'
        'rm:Remove networks'
        'remove:Remove networks'
        'prune:Remove every network no sandbox is on'
        'connect:Connect a running sandbox to a network'
        'disconnect:Disconnect a sandbox from a network'
      )
      _describe -t commands 'sbx network command' commands && ret=0 ;;
    args)
      local sub=${words[1]}
      case $sub in list) sub=ls ;; esac
      (( $+functions[_sbx_network_${sub}] )) && _sbx_network_${sub} && ret=0 ;;
  esac
  return ret
}
_sbx_network_create() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--subnet[Its IPv4 subnet, a.b.c.d/len]:value: ' \
    '--gateway[Its gateway and DNS server address]:value: ' \
    '--internal[No way out: only its own sandboxes and its DNS server]' \
    '*--allow-egress[Allow only this IP, CIDR, DOMAIN or *.DOMAIN out of the network]:value: ' \
    '*--deny-egress[Refuse this IP or CIDR out of the network]:value: ' \
    '*--dns[An upstream server of the network'\''s DNS server]:value: ' \
    '*'{-l,--label}'[A label KEY=VALUE]:value: ' \
    '(-d --driver)'{-d,--driver}'[bridge (the only one)]:value:(bridge)' \
    '--json[Print the network as JSON]' \
    '1:name: '
}
_sbx_network_ls() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--json[Print JSON]' \
    '(-q --quiet)'{-q,--quiet}'[Print ids only]' \
    '--no-trunc[Print full ids]' \
    '*'{-f,--filter}'[name=, id=, label=KEY=VALUE, driver=]:value: '
}
_sbx_network_inspect() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '*:network:__sbx_networks'
}
_sbx_network_rm() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '*:network:__sbx_networks'
}
_sbx_network_remove() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '*:network:__sbx_networks'
}
_sbx_network_prune() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-f --force)'{-f,--force}'[Do not ask]' \
    '*--filter[name=, id=, label=KEY=VALUE, driver=]:value: ' \
    '--json[Print the removed names as JSON]'
}
_sbx_network_connect() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '*--alias[Another name for it on the network'\''s DNS]:value: ' \
    '--ip[Its IPv4 address on the network]:value: ' \
    '1:network:__sbx_networks' \
    '2:sandbox:__sbx_sandboxes'
}
_sbx_network_disconnect() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-f --force)'{-f,--force}'[Accepted for docker'\''s command lines]' \
    '1:network:__sbx_networks' \
    '2:sandbox:__sbx_sandboxes'
}
__sbx_volumes() {
  local -a vols
  vols=(${(f)"$(sbx volume ls -q 2>/dev/null)"})
  _describe -t volumes 'volume' vols
}
_sbx_volume() {
  local curcontext="$curcontext" state line ret=1
  _arguments -C -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '1: :->command' \
    '*:: :->args' && ret=0
  case $state in
    command)
      local -a commands=(
        'create:Create a volume'
        'ls:List volumes'
        'list:List volumes'
        'inspect:Show volumes as JSON'
        'rm:Remove volumes'
        'remove:Remove volumes'
        'prune:Remove every volume no sandbox uses'
      )
      _describe -t commands 'sbx volume command' commands && ret=0 ;;
    args)
      local sub=${words[1]}
      (( $+functions[_sbx_volume_${sub}] )) && _sbx_volume_${sub} && ret=0 ;;
  esac
  return ret
}
_sbx_volume_create() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '*'{-l,--label}'[A label KEY=VALUE]:value: ' \
    '(-d --driver)'{-d,--driver}'[local (the only one)]:value:(local)' \
    '*'{-o,--opt}'[A driver option KEY=VALUE (type=tmpfs, o=size=64m)]:value:(type=tmpfs o=size=)' \
    '--json[Print the volume as JSON]' \
    '1:name: '
}
_sbx_volume_ls() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--json[Print JSON]' \
    '(-q --quiet)'{-q,--quiet}'[Print names only]' \
    '*'{-f,--filter}'[name=, label=KEY=VALUE, dangling=true|false, driver=]:value: '
}
_sbx_volume_inspect() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--json[Print JSON]' \
    '*:volume:__sbx_volumes'
}
_sbx_volume_rm() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-f --force)'{-f,--force}'[No error for a volume that does not exist]' \
    '*:volume:__sbx_volumes'
}
_sbx_volume_remove() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-f --force)'{-f,--force}'[No error for a volume that does not exist]' \
    '*:volume:__sbx_volumes'
}
_sbx_volume_list() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '--json[Print JSON]' \
    '(-q --quiet)'{-q,--quiet}'[Print names only]' \
    '*'{-f,--filter}'[name=, label=KEY=VALUE, dangling=true|false, driver=]:value: '
}
_sbx_volume_prune() {
  _arguments -s -S \
    '(- *)'{-h,--help}'[Print help and exit]' \
    '(-f --force)'{-f,--force}'[Do not ask]' \
    '*--filter[name=, label=KEY=VALUE, driver=]:value: ' \
    '--json[Print the removed volumes as JSON]'
}

_sbx "$@"
