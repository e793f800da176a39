# fish completion for sbx. Installed as
# share/fish/vendor_completions.d/sbx.fish (see CMakeLists.txt install()).
# Options follow `sbx CMD --help`; tests/integration/test_cli_docs.sh checks they agree.

# The words after "sbx" that are not options, skipping the values of the global options.
function __sbx_words
    set -l toks (commandline -opc)
    set -e toks[1]
    set -l skip 0
    for t in $toks
        if test $skip = 1
            set skip 0
            continue
        end
        switch $t
            case --root --run-root --log-level
                set skip 1
            case '-*'
            case '*'
                echo $t
        end
    end
end
function __sbx_no_cmd
    test (count (__sbx_words)) -eq 0
end
# True when the subcommand is one of $argv.
function __sbx_cmd_is
    set -l w (__sbx_words)
    test (count $w) -ge 1; and contains -- $w[1] $argv
end
# sbx snapshots [SUB]: no argument: no SUB yet; else SUB is $argv[1].
function __sbx_snap_sub
    set -l w (__sbx_words)
    test (count $w) -ge 1; and test "$w[1]" = snapshots; or return 1
    if test (count $argv) -eq 0
        test (count $w) -eq 1
    else
        test (count $w) -ge 2; and test "$w[2]" = $argv[1]
    end
end
function __sbx_opt_value --argument-names name default
    set -l toks (commandline -opc)
    set -l i (contains -i -- $name $toks)
    and test (count $toks) -gt $i; and echo $toks[(math $i + 1)]; and return
    echo $default
end
function __sbx_images
    set -l root (__sbx_opt_value --root (set -q SBX_ROOT; and echo $SBX_ROOT; or echo /var/lib/sbx))
    sbx --root $root images 2>/dev/null | awk 'NR > 1 && $1 != "<none>" {print $1; print $1 ":" $2}'
end
function __sbx_sandboxes
    set -l run_root (__sbx_opt_value --run-root (set -q SBX_RUN_ROOT; and echo $SBX_RUN_ROOT; or echo /run/sbx))
    set -l root (__sbx_opt_value --root (set -q SBX_ROOT; and echo $SBX_ROOT; or echo /var/lib/sbx))
    # short ids and names (sbx itself reads the state: its layout is its own)
    sbx --root $root --run-root $run_root ps -a --format '{{.ID}} {{.Names}}' 2>/dev/null | string split -n ' ' 
end
function __sbx_snapshots
    set -l root (__sbx_opt_value --root (set -q SBX_ROOT; and echo $SBX_ROOT; or echo /var/lib/sbx))
    sbx --root $root snapshots 2>/dev/null | awk 'NR > 1 {print $1}'
end

complete -c sbx -f

# Global options and subcommands.
complete -c sbx -n __sbx_no_cmd -s h -l help -d 'Print this help message and exit'
complete -c sbx -n __sbx_no_cmd -s v -l version -d 'Display program version information and exit'
complete -c sbx -n __sbx_no_cmd -l root -r -F -d 'Image store directory'
complete -c sbx -n __sbx_no_cmd -l run-root -r -F -d 'Directory for live sandbox state'
complete -c sbx -n __sbx_no_cmd -l log-level -x -a 'trace debug info warn error off' -d 'Log level'
complete -c sbx -n __sbx_no_cmd -a import -d 'Import an OCI image layout dir, oci-archive or docker-archive into'
complete -c sbx -n __sbx_no_cmd -a images -d 'List images in the store'
complete -c sbx -n __sbx_no_cmd -a tag -d 'Give an image another name'
complete -c sbx -n __sbx_no_cmd -a rmi -d 'Remove images'
complete -c sbx -n __sbx_no_cmd -a run -d 'Run a command in a new, throw-away sandbox'
complete -c sbx -n __sbx_no_cmd -a info -d 'Show what this host offers'
complete -c sbx -n __sbx_no_cmd -a gc -d 'Remove leftovers of killed sandboxes, unreferenced image blobs and'
complete -c sbx -n __sbx_no_cmd -a serve -d 'Serve the Docker Engine API (docker, docker-py, dockerode) on a socket'
complete -c sbx -n __sbx_no_cmd -a create -d 'Start a long-lived sandbox in the background and print its id'
complete -c sbx -n __sbx_no_cmd -a exec -d 'Run a command in a running sandbox'
complete -c sbx -n __sbx_no_cmd -a ps -d 'List sandboxes'
complete -c sbx -n __sbx_no_cmd -a list -d 'List sandboxes'
complete -c sbx -n __sbx_no_cmd -a inspect -d 'Show everything about sandboxes or images'
complete -c sbx -n __sbx_no_cmd -a wait -d 'Wait for sandboxes to end'
complete -c sbx -n __sbx_no_cmd -a stop -d 'Stop sandboxes: SIGTERM, then SIGKILL after --time'
complete -c sbx -n __sbx_no_cmd -a kill -d 'Send a signal to sandboxes'
complete -c sbx -n __sbx_no_cmd -a rm -d 'Remove sandboxes'
complete -c sbx -n __sbx_no_cmd -a rename -d 'Rename a sandbox'
complete -c sbx -n __sbx_no_cmd -a logs -d 'Print the output of a sandbox\'s first process'
complete -c sbx -n __sbx_no_cmd -a cp -d 'Copy files between a running sandbox and the host'
complete -c sbx -n __sbx_no_cmd -a snapshot -d 'Save a sandbox\'s file system changes as a new image'
complete -c sbx -n __sbx_no_cmd -a export -d 'Write an image'
complete -c sbx -n __sbx_no_cmd -a snapshot-dir -d 'Save one directory of a sandbox as a content-addressed snapshot'
complete -c sbx -n __sbx_no_cmd -a snapshots -d 'List snapshots of every kind'
complete -c sbx -n __sbx_no_cmd -a checkpoint -d 'Save a running sandbox\'s memory and file system'
complete -c sbx -n __sbx_no_cmd -a restore -d 'Start sandboxes that continue from a memory snapshot'
complete -c sbx -n __sbx_no_cmd -a pull -d 'Pull an image from a registry into the store'
complete -c sbx -n __sbx_no_cmd -a push -d 'Push an image of the store'
complete -c sbx -n __sbx_no_cmd -a login -d 'Log in to a registry'
complete -c sbx -n __sbx_no_cmd -a logout -d 'Remove a registry\'s credentials from the auth file'
complete -c sbx -n __sbx_no_cmd -a stats -d 'Show live resource usage of running sandboxes'
complete -c sbx -n __sbx_no_cmd -a system -d 'Host-wide settings for sbx'
complete -c sbx -n __sbx_no_cmd -a build -d 'Build an image from a Dockerfile'
complete -c sbx -n __sbx_no_cmd -a history -d 'Show the history of an image'
complete -c sbx -n __sbx_no_cmd -a image -d 'Image maintenance'
complete -c sbx -n __sbx_no_cmd -a network -d 'Manage user-defined networks'
complete -c sbx -n __sbx_no_cmd -a trajectory -d 'Show or export a recorded sandbox\'s trajectory'
complete -c sbx -n __sbx_no_cmd -a branch -d 'New sandboxes with the files of a recorded step'
complete -c sbx -n __sbx_no_cmd -a replay -d 'Run a recorded trajectory again and say where it diverges'
complete -c sbx -n __sbx_no_cmd -a volume -d 'Manage named volumes'
complete -c sbx -n __sbx_no_cmd -a batch -d 'Run many tasks (JSON lines), each in its own throw-away sandbox'

# sbx import
complete -c sbx -n '__sbx_cmd_is import' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is import' -s q -l quiet -d 'No progress output'
complete -c sbx -n '__sbx_cmd_is import' -F

# sbx images
complete -c sbx -n '__sbx_cmd_is images' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is images' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_cmd_is images' -s q -l quiet -d 'Print image ids only'

# sbx tag
complete -c sbx -n '__sbx_cmd_is tag' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is tag' -a '(__sbx_images)'

# sbx rmi
complete -c sbx -n '__sbx_cmd_is rmi' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is rmi' -s f -l force -d 'Remove even when a sandbox uses the image'
complete -c sbx -n '__sbx_cmd_is rmi' -a '(__sbx_images)'

# sbx run
complete -c sbx -n '__sbx_cmd_is run' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is run' -s e -l env -x -d 'Set an environment variable'
complete -c sbx -n '__sbx_cmd_is run' -l env-file -r -F -d 'Read environment variables from a file'
complete -c sbx -n '__sbx_cmd_is run' -s w -l workdir -x -d 'Working directory inside the sandbox'
complete -c sbx -n '__sbx_cmd_is run' -s u -l user -x -d 'User: NAME|UID:GROUP|GID, resolved in the image\'s /etc/passwd'
complete -c sbx -n '__sbx_cmd_is run' -s v -l volume -r -F -d 'Bind mount HOST-DIR:CONTAINER-DIR:OPTS'
complete -c sbx -n '__sbx_cmd_is run' -l mount -x -d 'Mount type=volume|bind|tmpfs,source=NAME|HOST-DIR,target=CONTAINER-DIR,readonly'
complete -c sbx -n '__sbx_cmd_is run' -l tmpfs -x -d 'Mount a tmpfs: PATH:size=64m,mode=1777,exec'
complete -c sbx -n '__sbx_cmd_is run' -l read-only -d 'Mount the root file system read-only'
complete -c sbx -n '__sbx_cmd_is run' -l hostname -x -d 'Host name inside the sandbox'
complete -c sbx -n '__sbx_cmd_is run' -l network -l net -x -a 'none host private bridge (__sbx_network_names)' -d 'Network: none (only loopback, the default), host, private, or user-defined networks'
complete -c sbx -n '__sbx_cmd_is run' -l network-alias -x -d 'On a user-defined network: another name for the sandbox on its DNS'
complete -c sbx -n '__sbx_cmd_is run' -l ip -x -d 'On a user-defined network: its IPv4 address there'
complete -c sbx -n '__sbx_cmd_is run' -l allow-egress -x -d 'With --network private: allow only this IP, CIDR, DOMAIN or *.DOMAIN'
complete -c sbx -n '__sbx_cmd_is run' -l deny-egress -x -d 'With --network private: refuse this IP or CIDR'
complete -c sbx -n '__sbx_cmd_is run' -s p -l publish -x -d 'With --network private: publish HOST_IP:HOST_PORT:CONTAINER_PORT/tcp|udp'
complete -c sbx -n '__sbx_cmd_is run' -l dns -x -d 'With --network private: a DNS server for /etc/resolv.conf'
complete -c sbx -n '__sbx_cmd_is run' -l add-host -x -d 'With --network private: add NAME:IP to /etc/hosts'
complete -c sbx -n '__sbx_cmd_is run' -l userns -x -a 'auto host' -d 'User namespace: auto (a per-sandbox host id range, the default) or host'
complete -c sbx -n '__sbx_cmd_is run' -s m -l memory -x -d 'Memory limit'
complete -c sbx -n '__sbx_cmd_is run' -l disk -x -d 'Limit the writable layer'
complete -c sbx -n '__sbx_cmd_is run' -l cpus -x -d 'CPU limit, in CPUs'
complete -c sbx -n '__sbx_cmd_is run' -l pids-limit -x -d 'Most processes in the sandbox'
complete -c sbx -n '__sbx_cmd_is run' -l ulimit -x -d 'rlimit NAME=SOFT:HARD, e.g. nofile=1024:2048'
complete -c sbx -n '__sbx_cmd_is run' -l timeout -x -d 'Kill the sandbox after this long'
complete -c sbx -n '__sbx_cmd_is run' -l rootfs -r -F -d 'Use DIR as the read-only, overlaid root instead of an image'
complete -c sbx -n '__sbx_cmd_is run' -l entrypoint -x -d 'Override the image\'s Entrypoint'
complete -c sbx -n '__sbx_cmd_is run' -l name -x -d 'A name for the sandbox'
complete -c sbx -n '__sbx_cmd_is run' -l runtime -x -a 'native gvisor' -d 'Runtime: native (namespaces, the default) or gvisor (runsc)'
complete -c sbx -n '__sbx_cmd_is run' -l pull -x -a 'missing always never newer' -d 'Pull the image: missing, always, never or newer'
complete -c sbx -n '__sbx_cmd_is run' -l runsc -r -F -d 'Path to runsc for --runtime gvisor'
complete -c sbx -n '__sbx_cmd_is run' -l mount-snapshot -x -d 'Mount a writable copy of directory snapshot NAME at TARGET'
complete -c sbx -n '__sbx_cmd_is run' -s i -l interactive -d 'Keep stdin open'
complete -c sbx -n '__sbx_cmd_is run' -s t -l tty -d 'Allocate a pseudo-terminal'
complete -c sbx -n '__sbx_cmd_is run' -l gpus -x -a 'all' -d 'NVIDIA GPUs to give the sandbox'
complete -c sbx -n '__sbx_cmd_is run' -l device -x -d 'Add a device'
complete -c sbx -n '__sbx_cmd_is run' -l end-record -r -F -d 'Write how the sandbox ended as JSON to FILE'
complete -c sbx -n '__sbx_cmd_is run' -l rm -d 'Accepted for docker compatibility'
complete -c sbx -n '__sbx_cmd_is run' -a '(__sbx_images)'

# sbx info
complete -c sbx -n '__sbx_cmd_is info' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is info' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_cmd_is info' -l runsc -r -F -d 'Path to the runsc to describe'

# sbx gc
complete -c sbx -n '__sbx_cmd_is gc' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is gc' -l older-than -x -d 'Also remove snapshots'

# sbx create
complete -c sbx -n '__sbx_cmd_is create' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is create' -s e -l env -x -d 'Set an environment variable'
complete -c sbx -n '__sbx_cmd_is create' -l env-file -r -F -d 'Read environment variables from a file'
complete -c sbx -n '__sbx_cmd_is create' -s w -l workdir -x -d 'Working directory inside the sandbox'
complete -c sbx -n '__sbx_cmd_is create' -s u -l user -x -d 'User: NAME|UID:GROUP|GID, resolved in the image\'s /etc/passwd'
complete -c sbx -n '__sbx_cmd_is create' -s v -l volume -r -F -d 'Bind mount HOST-DIR:CONTAINER-DIR:OPTS'
complete -c sbx -n '__sbx_cmd_is create' -l mount -x -d 'Mount type=volume|bind|tmpfs,source=NAME|HOST-DIR,target=CONTAINER-DIR,readonly'
complete -c sbx -n '__sbx_cmd_is create' -l tmpfs -x -d 'Mount a tmpfs: PATH:size=64m,mode=1777,exec'
complete -c sbx -n '__sbx_cmd_is create' -l read-only -d 'Mount the root file system read-only'
complete -c sbx -n '__sbx_cmd_is create' -l hostname -x -d 'Host name inside the sandbox'
complete -c sbx -n '__sbx_cmd_is create' -l network -l net -x -a 'none host private bridge (__sbx_network_names)' -d 'Network: none (only loopback, the default), host, private, or user-defined networks'
complete -c sbx -n '__sbx_cmd_is create' -l network-alias -x -d 'On a user-defined network: another name for the sandbox on its DNS'
complete -c sbx -n '__sbx_cmd_is create' -l ip -x -d 'On a user-defined network: its IPv4 address there'
complete -c sbx -n '__sbx_cmd_is create' -l allow-egress -x -d 'With --network private: allow only this IP, CIDR, DOMAIN or *.DOMAIN'
complete -c sbx -n '__sbx_cmd_is create' -l deny-egress -x -d 'With --network private: refuse this IP or CIDR'
complete -c sbx -n '__sbx_cmd_is create' -s p -l publish -x -d 'With --network private: publish HOST_IP:HOST_PORT:CONTAINER_PORT/tcp|udp'
complete -c sbx -n '__sbx_cmd_is create' -l dns -x -d 'With --network private: a DNS server for /etc/resolv.conf'
complete -c sbx -n '__sbx_cmd_is create' -l add-host -x -d 'With --network private: add NAME:IP to /etc/hosts'
complete -c sbx -n '__sbx_cmd_is create' -l userns -x -a 'auto host' -d 'User namespace: auto (a per-sandbox host id range, the default) or host'
complete -c sbx -n '__sbx_cmd_is create' -s m -l memory -x -d 'Memory limit'
complete -c sbx -n '__sbx_cmd_is create' -l disk -x -d 'Limit the writable layer'
complete -c sbx -n '__sbx_cmd_is create' -l cpus -x -d 'CPU limit, in CPUs'
complete -c sbx -n '__sbx_cmd_is create' -l pids-limit -x -d 'Most processes in the sandbox'
complete -c sbx -n '__sbx_cmd_is create' -l ulimit -x -d 'rlimit NAME=SOFT:HARD, e.g. nofile=1024:2048'
complete -c sbx -n '__sbx_cmd_is create' -l timeout -x -d 'End the sandbox after this long'
complete -c sbx -n '__sbx_cmd_is create' -l rootfs -r -F -d 'Use DIR as the read-only, overlaid root instead of an image'
complete -c sbx -n '__sbx_cmd_is create' -l entrypoint -x -d 'Override the image\'s Entrypoint'
complete -c sbx -n '__sbx_cmd_is create' -l name -x -d 'A name for the sandbox'
complete -c sbx -n '__sbx_cmd_is create' -l runtime -x -a 'native gvisor' -d 'Runtime: native (namespaces, the default) or gvisor (runsc)'
complete -c sbx -n '__sbx_cmd_is create' -l pull -x -a 'missing always never newer' -d 'Pull the image: missing, always, never or newer'
complete -c sbx -n '__sbx_cmd_is create' -l runsc -r -F -d 'Path to runsc for --runtime gvisor'
complete -c sbx -n '__sbx_cmd_is create' -l mount-snapshot -x -d 'Mount a writable copy of directory snapshot NAME at TARGET'
complete -c sbx -n '__sbx_cmd_is create' -l gpus -x -a 'all' -d 'NVIDIA GPUs to give the sandbox'
complete -c sbx -n '__sbx_cmd_is create' -l device -x -d 'Add a device'
complete -c sbx -n '__sbx_cmd_is create' -l idle-timeout -x -d 'End the sandbox after this long without an exec'
complete -c sbx -n '__sbx_cmd_is create' -s l -l label -x -d 'A label KEY=VALUE'
complete -c sbx -n '__sbx_cmd_is create' -l record -d 'Keep a trajectory of every exec, cp and snapshot'
complete -c sbx -n '__sbx_cmd_is create' -l redact -x -d 'With --record: store this env NAME (or REGEX; stdin) as a digest only'
complete -c sbx -n '__sbx_cmd_is create' -l timens -d 'Monotonic and boot clocks that start at 0 (a time namespace; default with --record)'
complete -c sbx -n '__sbx_cmd_is create' -l no-timens -d 'The host\'s monotonic and boot clocks, also with --record'
complete -c sbx -n '__sbx_cmd_is create' -a '(__sbx_images)'

# sbx exec
complete -c sbx -n '__sbx_cmd_is exec' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is exec' -s e -l env -x -d 'Set an environment variable KEY=VALUE'
complete -c sbx -n '__sbx_cmd_is exec' -s w -l workdir -x -d 'Working directory inside the sandbox'
complete -c sbx -n '__sbx_cmd_is exec' -s u -l user -x -d 'User: NAME|UID:GROUP|GID'
complete -c sbx -n '__sbx_cmd_is exec' -l timeout -x -d 'Kill the command after this long'
complete -c sbx -n '__sbx_cmd_is exec' -s i -l interactive -d 'Keep stdin open'
complete -c sbx -n '__sbx_cmd_is exec' -s t -l tty -d 'Allocate a pseudo-terminal'
complete -c sbx -n '__sbx_cmd_is exec' -a '(__sbx_sandboxes)'

# sbx ps
complete -c sbx -n '__sbx_cmd_is ps list' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is ps list' -s a -l all -d 'Show every sandbox, not only running ones'
complete -c sbx -n '__sbx_cmd_is ps list' -s q -l quiet -d 'Print ids only'
complete -c sbx -n '__sbx_cmd_is ps list' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_cmd_is ps list' -l no-trunc -d 'Print full ids'
complete -c sbx -n '__sbx_cmd_is ps list' -s f -l filter -x -d 'label=KEY=VALUE, name=NAME, status=STATUS, id=PREFIX'
complete -c sbx -n '__sbx_cmd_is ps list' -l format -x -a 'json' -d 'json or a template of {{.Field}}s'

# sbx inspect
complete -c sbx -n '__sbx_cmd_is inspect' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is inspect' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_cmd_is inspect' -a '(__sbx_images; __sbx_sandboxes)'

# sbx wait
complete -c sbx -n '__sbx_cmd_is wait' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is wait' -a '(__sbx_sandboxes)'

# sbx stop
complete -c sbx -n '__sbx_cmd_is stop' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is stop' -s t -l time -x -d 'Seconds to wait before SIGKILL'
complete -c sbx -n '__sbx_cmd_is stop' -a '(__sbx_sandboxes)'

# sbx kill
complete -c sbx -n '__sbx_cmd_is kill' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is kill' -s s -l signal -x -a 'TERM KILL INT HUP QUIT USR1 USR2 STOP CONT' -d 'Signal name or number'
complete -c sbx -n '__sbx_cmd_is kill' -a '(__sbx_sandboxes)'

# sbx rename
complete -c sbx -n '__sbx_cmd_is rename' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is rename' -a '(__sbx_sandboxes)'

# sbx rm
complete -c sbx -n '__sbx_cmd_is rm' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is rm' -s f -l force -d 'Kill running sandboxes first'
complete -c sbx -n '__sbx_cmd_is rm' -s v -l volumes -d 'Also remove their anonymous volumes'
complete -c sbx -n '__sbx_cmd_is rm' -s a -l all -d 'Remove every sandbox'
complete -c sbx -n '__sbx_cmd_is rm' -l filter -x -d 'label=KEY=VALUE, name=, status=, id='
complete -c sbx -n '__sbx_cmd_is rm' -a '(__sbx_sandboxes)'

# sbx logs
complete -c sbx -n '__sbx_cmd_is logs' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is logs' -s f -l follow -d 'Keep printing until the sandbox ends'
complete -c sbx -n '__sbx_cmd_is logs' -a '(__sbx_sandboxes)'

# sbx cp
complete -c sbx -n '__sbx_cmd_is cp' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is cp' -F
complete -c sbx -n '__sbx_cmd_is cp' -a '(__sbx_sandboxes | string replace -r \$ :)' -d sandbox

# sbx snapshot
complete -c sbx -n '__sbx_cmd_is snapshot' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is snapshot' -l name -x -d 'Name for the new image'
complete -c sbx -n '__sbx_cmd_is snapshot' -l upper -r -F -d 'Instead of a sandbox'
complete -c sbx -n '__sbx_cmd_is snapshot' -l image -x -a '(__sbx_images)' -d '... on top of this image'
complete -c sbx -n '__sbx_cmd_is snapshot' -a '(__sbx_sandboxes)'

# sbx export
complete -c sbx -n '__sbx_cmd_is export' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is export' -s o -l output -r -F -d 'Archive file to write'
complete -c sbx -n '__sbx_cmd_is export' -l format -x -a 'oci-archive docker-archive' -d 'oci-archive or docker-archive'
complete -c sbx -n '__sbx_cmd_is export' -l name -x -d 'Name to record in the archive'
complete -c sbx -n '__sbx_cmd_is export' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_cmd_is export' -a '(__sbx_images)'

# sbx snapshot-dir
complete -c sbx -n '__sbx_cmd_is snapshot-dir' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is snapshot-dir' -l name -x -d 'Snapshot name'
complete -c sbx -n '__sbx_cmd_is snapshot-dir' -l host-dir -r -F -d 'Instead of a sandbox'
complete -c sbx -n '__sbx_cmd_is snapshot-dir' -a '(__sbx_sandboxes)'

# sbx snapshots
complete -c sbx -n '__sbx_snap_sub' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_snap_sub' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_snap_sub' -a rm -d 'Remove snapshots'
complete -c sbx -n '__sbx_snap_sub' -a extract -d 'Extract a directory snapshot into a host directory'
complete -c sbx -n '__sbx_snap_sub' -a prune -d 'Remove snapshots not used for longer than --older-than'

# sbx snapshots rm
complete -c sbx -n '__sbx_snap_sub rm' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_snap_sub rm' -a '(__sbx_snapshots)'

# sbx snapshots extract
complete -c sbx -n '__sbx_snap_sub extract' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_snap_sub extract' -a '(__sbx_snapshots)'
complete -c sbx -n '__sbx_snap_sub extract' -F

# sbx snapshots prune
complete -c sbx -n '__sbx_snap_sub prune' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_snap_sub prune' -l older-than -x -d 'Age, e.g. 7d, 12h, 30m'

# sbx checkpoint
complete -c sbx -n '__sbx_cmd_is checkpoint' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is checkpoint' -l name -x -d 'Snapshot name'
complete -c sbx -n '__sbx_cmd_is checkpoint' -l leave-running -d 'Keep the sandbox running'
complete -c sbx -n '__sbx_cmd_is checkpoint' -l runsc -r -F -d 'Path to runsc'
complete -c sbx -n '__sbx_cmd_is checkpoint' -a '(__sbx_sandboxes)'

# sbx restore
complete -c sbx -n '__sbx_cmd_is restore' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is restore' -l name -x -d 'Name of the new sandbox'
complete -c sbx -n '__sbx_cmd_is restore' -l count -x -d 'Independent copies to start'
complete -c sbx -n '__sbx_cmd_is restore' -l runsc -r -F -d 'Path to runsc'
complete -c sbx -n '__sbx_cmd_is restore' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_cmd_is restore' -a '(__sbx_snapshots)'

# sbx pull
complete -c sbx -n '__sbx_cmd_is pull' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is pull' -l platform -x -a 'linux/amd64 linux/arm64 linux/arm/v7' -d 'os/arch/variant to pick from a multi-platform image'
complete -c sbx -n '__sbx_cmd_is pull' -s q -l quiet -d 'No progress output'
complete -c sbx -n '__sbx_cmd_is pull' -l json -d 'Progress as JSON lines on stderr'
complete -c sbx -n '__sbx_cmd_is pull' -l registries-conf -r -F -d 'registries.conf'
complete -c sbx -n '__sbx_cmd_is pull' -l jobs -x -d 'Blobs to download at once'
complete -c sbx -n '__sbx_cmd_is pull' -l tls-verify -x -a 'true false' -d 'Verify TLS certificates'
complete -c sbx -n '__sbx_cmd_is pull' -l authfile -r -F -d 'Credentials file'
complete -c sbx -n '__sbx_cmd_is pull' -l cert-dir -x -a '(__fish_complete_directories)' -d 'Directory of HOST/ca.crt CA files'
complete -c sbx -n '__sbx_cmd_is pull' -a '(__sbx_images)'

# sbx push
complete -c sbx -n '__sbx_cmd_is push' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is push' -s q -l quiet -d 'No progress output'
complete -c sbx -n '__sbx_cmd_is push' -l json -d 'Progress as JSON lines on stderr'
complete -c sbx -n '__sbx_cmd_is push' -l tls-verify -x -a 'true false' -d 'Verify TLS certificates'
complete -c sbx -n '__sbx_cmd_is push' -l authfile -r -F -d 'Credentials file'
complete -c sbx -n '__sbx_cmd_is push' -l cert-dir -x -a '(__fish_complete_directories)' -d 'Directory of HOST/ca.crt CA files'
complete -c sbx -n '__sbx_cmd_is push' -a '(__sbx_images)'

# sbx login
complete -c sbx -n '__sbx_cmd_is login' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is login' -s u -l username -x -d 'User name'
complete -c sbx -n '__sbx_cmd_is login' -s p -l password -x -d 'Password'
complete -c sbx -n '__sbx_cmd_is login' -l password-stdin -d 'Read the password from stdin'
complete -c sbx -n '__sbx_cmd_is login' -l tls-verify -x -a 'true false' -d 'Verify TLS certificates'
complete -c sbx -n '__sbx_cmd_is login' -l authfile -r -F -d 'Credentials file'
complete -c sbx -n '__sbx_cmd_is login' -l cert-dir -x -a '(__fish_complete_directories)' -d 'Directory of HOST/ca.crt CA files'

# sbx logout
complete -c sbx -n '__sbx_cmd_is logout' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is logout' -s a -l all -d 'Remove the credentials of every registry'
complete -c sbx -n '__sbx_cmd_is logout' -l authfile -r -F -d 'Credentials file'

# sbx serve
complete -c sbx -n '__sbx_cmd_is serve' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is serve' -l socket -r -F -d 'Unix socket to listen on'
complete -c sbx -n '__sbx_cmd_is serve' -l tcp -x -d 'Also listen on loopback TCP ADDR:PORT (needs --token-file)'
complete -c sbx -n '__sbx_cmd_is serve' -l token-file -r -F -d 'File with the bearer token TCP clients must send'
complete -c sbx -n '__sbx_cmd_is serve' -l e2b -x -d 'Also serve an E2B-compatible API on loopback ADDR:PORT (needs --token-file)'
complete -c sbx -n '__sbx_cmd_is serve' -l sandbox-fusion -x -d 'Also serve a SandboxFusion-compatible API (/run_code, /run_jupyter) on ADDR:PORT'
complete -c sbx -n '__sbx_cmd_is serve' -l languages -r -F -d 'SandboxFusion languages table (JSON) over the defaults'
complete -c sbx -n '__sbx_cmd_is serve' -l trajectory-dir -x -a '(__fish_complete_directories)' -d 'Let /sbx/v1/trajectories read trajectory files by path under DIR'
complete -c sbx -n '__sbx_cmd_is serve' -l max-concurrency -x -d 'SandboxFusion sandboxes running at once'
complete -c sbx -n '__sbx_cmd_is serve' -l queue-timeout -x -d 'Most wait of a SandboxFusion request for a slot; then 504'
complete -c sbx -n '__sbx_cmd_is serve' -l runtime -x -a 'native gvisor' -d 'Runtime of containers that name none'
complete -c sbx -n '__sbx_cmd_is serve' -l max-connections -x -d 'Most connections open at once on each listener'
complete -c sbx -n '__sbx_cmd_is serve' -l max-client-connections -x -d 'Most connections open at once from one client on each listener'
complete -c sbx -n '__sbx_cmd_is serve' -l header-timeout -x -d 'Most time a request head may take'
complete -c sbx -n '__sbx_cmd_is serve' -l idle-timeout -x -d 'Most time without a byte from a client (streams exempt)'

# sbx stats
complete -c sbx -n '__sbx_cmd_is stats' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is stats' -l no-stream -d 'Print one sample and exit'
complete -c sbx -n '__sbx_cmd_is stats' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_cmd_is stats' -l no-trunc -d 'Print full ids'
complete -c sbx -n '__sbx_cmd_is stats' -s a -l all -d 'Accepted for podman compatibility'
complete -c sbx -n '__sbx_cmd_is stats' -s i -l interval -x -d 'Seconds between samples'
complete -c sbx -n '__sbx_cmd_is stats' -a '(__sbx_sandboxes)'

# sbx batch
complete -c sbx -n '__sbx_cmd_is batch' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is batch' -s P -l parallel -x -d 'Sandboxes at a time'
complete -c sbx -n '__sbx_cmd_is batch' -l pool -x -d 'Warm pool size per image (0: off)'
complete -c sbx -n '__sbx_cmd_is batch' -l image -x -a '(__sbx_images)' -d 'Image for tasks without an image'
complete -c sbx -n '__sbx_cmd_is batch' -l timeout -x -d 'Kill a task after this long'
complete -c sbx -n '__sbx_cmd_is batch' -s m -l memory -x -d 'Memory limit per task'
complete -c sbx -n '__sbx_cmd_is batch' -l network -x -a 'none private host' -d 'Network'
complete -c sbx -n '__sbx_cmd_is batch' -l allow-egress -x -d 'With --network private: allow only this IP, CIDR or domain'
complete -c sbx -n '__sbx_cmd_is batch' -l deny-egress -x -d 'With --network private: refuse this IP or CIDR'
complete -c sbx -n '__sbx_cmd_is batch' -l dns -x -d 'With --network private: DNS server'
complete -c sbx -n '__sbx_cmd_is batch' -l add-host -x -d 'With --network private: add NAME:IP to /etc/hosts'
complete -c sbx -n '__sbx_cmd_is batch' -s o -l output -r -F -d 'Append result lines to FILE'
complete -c sbx -n '__sbx_cmd_is batch' -l resume -d 'Skip tasks that have a result in the output'
complete -c sbx -n '__sbx_cmd_is batch' -l max-output -x -d 'Bytes of stdout and stderr kept per task'
complete -c sbx -n '__sbx_cmd_is batch' -l userns -x -a 'auto host' -d 'User namespace'
complete -c sbx -n '__sbx_cmd_is batch' -l runtime -x -a 'native gvisor' -d 'Backend'
complete -c sbx -n '__sbx_cmd_is batch' -l runsc -r -F -d 'runsc binary'
complete -c sbx -n '__sbx_cmd_is batch' -s q -l quiet -d 'No progress or summary'
complete -c sbx -n '__sbx_cmd_is batch' -F

# sbx system [tune]
function __sbx_system_sub
    set -l w (__sbx_words)
    test (count $w) -ge 1; and test "$w[1]" = system; or return 1
    if test (count $argv) -eq 0
        test (count $w) -eq 1
    else
        test (count $w) -ge 2; and test "$w[2]" = $argv[1]
    end
end
complete -c sbx -n '__sbx_system_sub' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_system_sub' -a tune -d 'Show or change host-wide settings that speed up sandbox starts'
complete -c sbx -n '__sbx_system_sub tune' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_system_sub tune' -l favordynmods -x -a 'on off' -d 'cgroup2 favordynmods'
complete -c sbx -n '__sbx_system_sub tune' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_system_sub' -a df -d 'Show the disk space images and the build cache take'
complete -c sbx -n '__sbx_system_sub df' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_system_sub df' -l json -d 'Print JSON'

# sbx build
complete -c sbx -n '__sbx_cmd_is build' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is build' -s t -l tag -x -d 'Name the image NAME[:TAG]'
complete -c sbx -n '__sbx_cmd_is build' -s f -l file -r -F -d 'Dockerfile'
complete -c sbx -n '__sbx_cmd_is build' -l build-arg -x -d 'Set a build argument KEY=VALUE'
complete -c sbx -n '__sbx_cmd_is build' -l target -x -d 'Build this stage'
complete -c sbx -n '__sbx_cmd_is build' -l no-cache -d 'Reuse no step from the build cache'
complete -c sbx -n '__sbx_cmd_is build' -l pull -d 'Pull base images: missing, always, never'
complete -c sbx -n '__sbx_cmd_is build' -l network -x -a 'private none host' -d 'Network of RUN steps'
complete -c sbx -n '__sbx_cmd_is build' -l label -x -d 'Add a label KEY=VALUE'
complete -c sbx -n '__sbx_cmd_is build' -l secret -x -d 'A secret id=ID,src=FILE'
complete -c sbx -n '__sbx_cmd_is build' -l iidfile -r -F -d 'Write the image id to FILE'
complete -c sbx -n '__sbx_cmd_is build' -l platform -x -d 'This host\'s platform only'
complete -c sbx -n '__sbx_cmd_is build' -s q -l quiet -d 'Print only the image id'
complete -c sbx -n '__sbx_cmd_is build' -l json -d 'Progress as JSON lines'
complete -c sbx -n '__sbx_cmd_is build' -l rm -d 'Accepted for docker compatibility'
complete -c sbx -n '__sbx_cmd_is build' -x -a '(__fish_complete_directories)'

# sbx history
complete -c sbx -n '__sbx_cmd_is history' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is history' -l no-trunc -d 'Do not shorten CREATED BY'
complete -c sbx -n '__sbx_cmd_is history' -s q -l quiet -d 'Print only the image id'
complete -c sbx -n '__sbx_cmd_is history' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_cmd_is history' -x -a '(__sbx_images)'

# sbx image prune
function __sbx_image_sub
    set -l w (__sbx_words)
    test (count $w) -ge 1; and test "$w[1]" = image; or return 1
    if test (count $argv) -eq 0
        test (count $w) -eq 1
    else
        test (count $w) -ge 2; and test "$w[2]" = $argv[1]
    end
end
complete -c sbx -n '__sbx_image_sub' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_image_sub' -a prune -d 'Remove the build cache and untagged images no sandbox uses'
complete -c sbx -n '__sbx_image_sub prune' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_image_sub prune' -l build-cache -d 'Remove only the build cache'
complete -c sbx -n '__sbx_image_sub prune' -l json -d 'Print JSON'

# sbx network [SUB]
function __sbx_network_names
    sbx network ls 2>/dev/null | awk 'NR > 1 {print $2}'
end
function __sbx_network_sub
    set -l w (__sbx_words)
    test (count $w) -ge 1; and test "$w[1]" = network; or return 1
    if test (count $argv) -eq 0
        test (count $w) -eq 1
    else
        test (count $w) -ge 2; and contains -- $w[2] $argv
    end
end
complete -c sbx -n '__sbx_network_sub' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_network_sub' -a create -d 'Create a network'
complete -c sbx -n '__sbx_network_sub' -a ls -d 'List networks'
complete -c sbx -n '__sbx_network_sub' -a list -d 'List networks'
complete -c sbx -n '__sbx_network_sub' -a inspect -d 'Show networks as JSON'
complete -c sbx -n '__sbx_network_sub' -a rm -d 'Remove networks'
complete -c sbx -n '__sbx_network_sub' -a remove -d 'Remove networks'
complete -c sbx -n '__sbx_network_sub' -a prune -d 'Remove every network no sandbox is on'
complete -c sbx -n '__sbx_network_sub' -a connect -d 'Connect a running sandbox to a network'
complete -c sbx -n '__sbx_network_sub' -a disconnect -d 'Disconnect a sandbox from a network'
for sub in create ls list inspect rm remove prune connect disconnect
    complete -c sbx -n "__sbx_network_sub $sub" -s h -l help -d 'Print this help message and exit'
end
complete -c sbx -n '__sbx_network_sub create' -l subnet -x -d 'Its IPv4 subnet, a.b.c.d/len'
complete -c sbx -n '__sbx_network_sub create' -l gateway -x -d 'Its gateway and DNS server address'
complete -c sbx -n '__sbx_network_sub create' -l internal -d 'No way out: only its own sandboxes and its DNS server'
complete -c sbx -n '__sbx_network_sub create' -l allow-egress -x -d 'Allow only this IP, CIDR, DOMAIN or *.DOMAIN out of the network'
complete -c sbx -n '__sbx_network_sub create' -l deny-egress -x -d 'Refuse this IP or CIDR out of the network'
complete -c sbx -n '__sbx_network_sub create' -l dns -x -d 'An upstream server of the network\'s DNS server'
complete -c sbx -n '__sbx_network_sub create' -s l -l label -x -d 'A label KEY=VALUE'
complete -c sbx -n '__sbx_network_sub create' -s d -l driver -x -a bridge -d 'bridge (the only one)'
complete -c sbx -n '__sbx_network_sub create' -l json -d 'Print the network as JSON'
complete -c sbx -n '__sbx_network_sub ls list' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_network_sub ls list' -s q -l quiet -d 'Print ids only'
complete -c sbx -n '__sbx_network_sub ls list' -l no-trunc -d 'Print full ids'
complete -c sbx -n '__sbx_network_sub ls list' -s f -l filter -x -d 'name=, id=, label=KEY=VALUE, driver='
complete -c sbx -n '__sbx_network_sub inspect rm remove' -x -a '(__sbx_network_names)'
complete -c sbx -n '__sbx_network_sub prune' -s f -l force -d 'Do not ask'
complete -c sbx -n '__sbx_network_sub prune' -l filter -x -d 'name=, id=, label=KEY=VALUE, driver='
complete -c sbx -n '__sbx_network_sub prune' -l json -d 'Print the removed names as JSON'
complete -c sbx -n '__sbx_network_sub connect' -l alias -x -d 'Another name for it on the network\'s DNS'
complete -c sbx -n '__sbx_network_sub connect' -l ip -x -d 'Its IPv4 address on the network'
complete -c sbx -n '__sbx_network_sub connect disconnect' -x -a '(__sbx_network_names)'
complete -c sbx -n '__sbx_network_sub disconnect' -s f -l force -d 'Accepted for docker\'s command lines'

# sbx trajectory [SUB]
function __sbx_trajectory_sub
    set -l w (__sbx_words)
    test (count $w) -ge 1; and test "$w[1]" = trajectory; or return 1
    if test (count $argv) -eq 0
        test (count $w) -eq 1
    else
        test (count $w) -ge 2; and contains -- $w[2] $argv
    end
end
complete -c sbx -n '__sbx_trajectory_sub' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_trajectory_sub' -a show -d 'A table of the steps of a recorded sandbox or a trajectory file'
complete -c sbx -n '__sbx_trajectory_sub' -a export -d 'Write a recorded sandbox\'s trajectory and its checkpoints as one tar'
complete -c sbx -n '__sbx_trajectory_sub show' -l json -d 'Print the header and the steps as JSON'
complete -c sbx -n '__sbx_trajectory_sub show' -F -a '(__sbx_sandboxes)'
complete -c sbx -n '__sbx_trajectory_sub export' -s o -l output -r -F -d 'The archive to write'
complete -c sbx -n '__sbx_trajectory_sub export' -x -a '(__sbx_sandboxes)'

# sbx branch
complete -c sbx -n '__sbx_cmd_is branch' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is branch' -l at -x -d 'The step whose resulting files the sandboxes get'
complete -c sbx -n '__sbx_cmd_is branch' -l count -x -d 'How many sandboxes'
complete -c sbx -n '__sbx_cmd_is branch' -l name -x -d 'Name them PREFIX or PREFIX-1, PREFIX-2, ...'
complete -c sbx -n '__sbx_cmd_is branch' -F -a '(__sbx_sandboxes)'

# sbx replay
complete -c sbx -n '__sbx_cmd_is replay' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_cmd_is replay' -l image -x -a '(__sbx_images)' -d 'Run it on this image instead of the recorded one'
complete -c sbx -n '__sbx_cmd_is replay' -l until -x -d 'The last step to replay'
complete -c sbx -n '__sbx_cmd_is replay' -l keep -d 'Keep the replay\'s sandbox'
complete -c sbx -n '__sbx_cmd_is replay' -l tolerate-regex -x -d 'Do not compare stdout/stderr lines matching this regex'
complete -c sbx -n '__sbx_cmd_is replay' -l tolerate-path -x -d 'Do not compare changed files whose path matches this regex'
complete -c sbx -n '__sbx_cmd_is replay' -l json -d 'Print the steps as JSON lines'
complete -c sbx -n '__sbx_cmd_is replay' -F

# sbx volume [SUB]
function __sbx_volume_names
    sbx volume ls -q 2>/dev/null
end
function __sbx_volume_sub
    set -l w (__sbx_words)
    test (count $w) -ge 1; and test "$w[1]" = volume; or return 1
    if test (count $argv) -eq 0
        test (count $w) -eq 1
    else
        test (count $w) -ge 2; and contains -- $w[2] $argv
    end
end
complete -c sbx -n '__sbx_volume_sub' -s h -l help -d 'Print this help message and exit'
complete -c sbx -n '__sbx_volume_sub' -a create -d 'Create a volume'
complete -c sbx -n '__sbx_volume_sub' -a ls -d 'List volumes'
complete -c sbx -n '__sbx_volume_sub' -a list -d 'List volumes'
complete -c sbx -n '__sbx_volume_sub' -a inspect -d 'Show volumes as JSON'
complete -c sbx -n '__sbx_volume_sub' -a rm -d 'Remove volumes'
complete -c sbx -n '__sbx_volume_sub' -a remove -d 'Remove volumes'
complete -c sbx -n '__sbx_volume_sub' -a prune -d 'Remove every volume no sandbox uses'
for sub in create ls list inspect rm remove prune
    complete -c sbx -n "__sbx_volume_sub $sub" -s h -l help -d 'Print this help message and exit'
end
complete -c sbx -n '__sbx_volume_sub create' -s l -l label -x -d 'A label KEY=VALUE'
complete -c sbx -n '__sbx_volume_sub create' -s d -l driver -x -a local -d 'local (the only one)'
complete -c sbx -n '__sbx_volume_sub create' -s o -l opt -x -a 'type=tmpfs o=size=' -d 'A driver option KEY=VALUE (type=tmpfs, o=size=64m)'
complete -c sbx -n '__sbx_volume_sub create' -l json -d 'Print the volume as JSON'
complete -c sbx -n '__sbx_volume_sub ls list' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_volume_sub ls list' -s q -l quiet -d 'Print names only'
complete -c sbx -n '__sbx_volume_sub ls list' -s f -l filter -x -d 'name=, label=KEY=VALUE, dangling=true|false, driver='
complete -c sbx -n '__sbx_volume_sub inspect' -l json -d 'Print JSON'
complete -c sbx -n '__sbx_volume_sub inspect rm remove' -x -a '(__sbx_volume_names)'
complete -c sbx -n '__sbx_volume_sub rm remove' -s f -l force -d 'No error for a volume that does not exist'
complete -c sbx -n '__sbx_volume_sub prune' -s f -l force -d 'Do not ask'
complete -c sbx -n '__sbx_volume_sub prune' -l filter -x -d 'name=, label=KEY=VALUE, driver='
complete -c sbx -n '__sbx_volume_sub prune' -l json -d 'Print the removed volumes as JSON'
