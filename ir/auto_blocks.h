// IOS blocks for a graph that has none (an imported model): the DAG is cut at every node that every
// path from the input to the output passes through, so each block runs between two such nodes.
#pragma once

#include "ir/graph.h"

namespace ios::ir {

// Replaces g.blocks with the blocks between the graph's cut nodes and revalidates the graph. Nodes
// must be in topological order (the IR's rule), the last node is the output, and every other node
// must be read by a later one (else the error names the first that is not). Big blocks keep no
// explicit parts: the DP splits them by its part size.
Status assign_blocks(Graph& g);

}  // namespace ios::ir
