#include "snapshot/upper_to_layer.h"

#include "snapshot/tree_tar.h"

namespace sbx::snapshot {

LayerTar upper_to_layer(const std::string& upper, const std::string& out_path, const std::vector<IdMapping>& uid_map,
                        const std::vector<IdMapping>& gid_map) {
  TreeTarOptions o;
  o.uid_map = uid_map;
  o.gid_map = gid_map;
  o.overlay_upper = true;
  o.compression = Compression::None;  // uncompressed: digest == diff id, no recompression cost
  TreeTarResult r = write_tree_tar(upper, out_path, o);
  return LayerTar{r.digest_hex, r.size, r.entries, r.whiteouts};
}

}  // namespace sbx::snapshot
