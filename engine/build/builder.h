// `sbx build`: an image from a Dockerfile, built in sbx's own sandboxes.
// The flow (engine/build/executor.cpp):
//
//   context (a directory, or a tar unpacked safely) + .dockerignore
//   -> Dockerfile parsed and split into stages (dockerfile.h)
//   -> the stages the target needs, in order; per stage:
//        FROM: the base image (pulled per --pull) or another stage, or scratch
//        each instruction: its cache key (cache.h); a hit reuses the image
//        of that step, else it runs:
//          RUN          a sandbox on the current layers (run_step.h); what
//                       it wrote becomes a layer (none when nothing changed)
//          COPY / ADD   a layer written from the sources (layer_writer.h)
//          WORKDIR      a layer with the directory when it is missing
//          the rest     the image config only
//        and its result is committed as an image (build cache until named)
//   -> the target stage's last image, named with the tags.
//
// Nothing half-made stays: a failed step leaves no image, no layer, no
// sandbox; temp files live under ROOT/tmp (removed on every path; `sbx gc`
// after a crash).
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "oci/image.h"
#include "oci/pull.h"
#include "oci/unpack.h"
#include "spec/sandbox_spec.h"

namespace sbx::build {

/// One progress event.
struct BuildEvent {
  enum class Kind {
    Step,     ///< a step starts: `text` is the instruction ("RUN pip install …")
    Cached,   ///< the step's result came from the cache
    Output,   ///< a chunk of the running step's output (stdout and stderr)
    Done,     ///< the step finished: `seconds`
    Warning,  ///< `text`: a warning for the user
    Pull,     ///< `text`: the image a FROM pulls (its progress goes through pull_options)
  };
  Kind kind = Kind::Step;
  std::string stage;   ///< the stage's name, or its index when unnamed ("0", "1"); "" for a one-stage build
  int step = 0;        ///< 1-based over the whole build (each FROM counts; ARG does not)
  int steps = 0;       ///< steps of the whole build: of the stages the target needs
  std::string text;
  double seconds = 0;
};

struct BuildOptions {
  /// The context: a directory; or `context_tar`, a tar (plain, gzip or
  /// zstd) that is unpacked as hostile input; neither: an empty context.
  std::string context_dir;
  std::string context_tar;
  /// Bounds on unpacking `context_tar` (bytes of files, entries): a server
  /// taking tars from clients sets tighter ones than the CLI's defaults.
  oci::UnpackLimits context_limits;
  /// The Dockerfile: a path (relative: to the context; default "Dockerfile"),
  /// or its text in `dockerfile_text` (then `dockerfile` only names it).
  std::string dockerfile;
  std::string dockerfile_text;
  bool has_dockerfile_text = false;
  std::vector<std::string> tags;                                 ///< NAME[:TAG] for the result
  std::vector<std::pair<std::string, std::string>> build_args;   ///< --build-arg K=V
  std::string target;                                            ///< --target STAGE; empty: the last
  bool no_cache = false;
  oci::PullPolicy pull = oci::PullPolicy::Missing;
  bool pull_explicit = false;
  oci::PullOptions pull_options;
  NetworkMode network = NetworkMode::Private;                    ///< of RUN steps (and ADD <url>)
  std::map<std::string, std::string> labels;                     ///< --label: added to the result's config
  std::map<std::string, std::string> secrets;                    ///< --secret id -> host file
  std::string platform;                                          ///< --platform; only the host's is accepted
  bool forward_signals = true;                                   ///< INT/TERM go to a running step (the CLI)
  /// Asked between steps and files: true stops the build ("build
  /// interrupted", exit code 130), cleaning up as after any error. A RUN
  /// ended by a forwarded INT/TERM stops it the same way.
  std::function<bool()> cancelled;
  std::function<void(const BuildEvent&)> on_event;               ///< progress (may be empty)
};

struct BuildResult {
  oci::ImageRecord image;  ///< the built image (named with the tags)
  int steps = 0;           ///< steps run or reused, FROM lines not counted
  int cached = 0;          ///< of those, reused
  std::chrono::milliseconds elapsed{0};
};

/// `e` as one line of JSON (no newline): {"event": "step"|"cached"|"output"|
/// "done"|"warning"|"pull", "stage", "step", "steps"} and per kind
/// "instruction", "data", "seconds", "message" or "image". The form of
/// `sbx build --json` and of /sbx/v1/build's stream (docs/api.md); invalid
/// UTF-8 in output is replaced.
std::string event_json(const BuildEvent& e);

/// Builds (see the top of this file) with the image store at `root` and
/// sandboxes' state in `run_root`. Throws sbx::Error: 125 for what the user
/// gave (a syntax error naming the file and line, an unknown stage or
/// instruction, a missing or escaping source, an image that cannot be
/// found or pulled, another platform); a failing RUN: "PATH:LINE: RUN …
/// returned a non-zero code: N" with exit code 1 (as docker build).
BuildResult build_image(const std::string& root, const std::string& run_root, const BuildOptions& opts);

}  // namespace sbx::build
