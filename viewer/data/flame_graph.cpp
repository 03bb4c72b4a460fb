#include "flame_graph.h"

#include "frame_name.h"

#include <cstdio>
#include <map>
#include <memory>

namespace txray::viewer {
namespace {

struct Node {
  int64_t samples = 0;
  std::map<std::string, std::unique_ptr<Node>> children;  // by name: the flame graph order
};

void emit(const std::string& name, const Node& n, int depth, double x0, double scale, double min_width,
          std::vector<FlameBox>& out) {
  double w = double(n.samples) * scale;
  if (w < min_width && depth > 0) return;
  out.push_back({name, n.samples, depth, x0, x0 + w});
  double x = x0;
  for (const auto& [child_name, child] : n.children) {
    emit(child_name, *child, depth + 1, x, scale, min_width, out);
    x += double(child->samples) * scale;
  }
}

}  // namespace

std::vector<FlameBox> flame_layout(const std::vector<CpuStack>& stacks, double min_width) {
  Node root;
  for (const auto& st : stacks) {
    if (st.samples <= 0) continue;
    root.samples += st.samples;
    Node* n = &root;
    size_t pos = 0;
    while (pos <= st.folded.size()) {
      size_t end = st.folded.find(';', pos);
      if (end == std::string::npos) end = st.folded.size();
      std::string frame = st.folded.substr(pos, end - pos);
      if (!frame.empty()) {
        auto& child = n->children[frame];
        if (!child) child = std::make_unique<Node>();
        child->samples += st.samples;
        n = child.get();
      }
      pos = end + 1;
    }
  }
  std::vector<FlameBox> out;
  if (root.samples == 0) return out;
  emit("all", root, 0, 0.0, 1.0 / double(root.samples), min_width, out);
  return out;
}

std::string hot_functions_text(const Step& s, bool full) {
  if (s.cpu_samples <= 0 || s.hot.empty()) return {};
  std::string out;
  for (const auto& h : s.hot) {
    char line[64];
    std::snprintf(line, sizeof line, "%3lld%%  ", static_cast<long long>((h.samples * 100 + s.cpu_samples / 2) / s.cpu_samples));
    out += line;
    out += full ? h.function : names::short_frame_name(h.function);
    if (!h.module.empty() && h.function.front() != '[') out += "  (" + h.module + ")";
    out += "  " + std::to_string(h.samples) + (h.samples == 1 ? " sample\n" : " samples\n");
  }
  return out;
}

}  // namespace txray::viewer
