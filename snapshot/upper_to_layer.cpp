#include "snapshot/upper_to_layer.h"

#include "snapshot/tree_tar.h"

namespace sbx::snapshot {

LayerTar upper_to_layer(const std::string& upper, const std::string& out_path) {
  TreeTarOptions o;
  o.overlay_upper = true;
  o.compression = Compression::None;  // uncompressed: digest == diff id, no recompression cost
  TreeTarResult r = write_tree_tar(upper, out_path, o);
  return LayerTar{r.digest_hex, r.size, r.entries, r.whiteouts};
}

}  // namespace sbx::snapshot
