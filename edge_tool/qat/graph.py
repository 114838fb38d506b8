"""A functional Keras model's graph read from its own objects (nodes, KerasTensors), and rebuilt with edits.

The layer configs' ``inbound_nodes`` have several shapes (``[name, node, tensor, kwargs]`` for TF-op layers,
whose kwargs may hold nested tensors), so the graph is read from ``model._nodes_by_depth`` instead: every node
knows its layer, its call arguments (KerasTensors anywhere in them) and its outputs. That works for every
layer kind, shared layers and nested functional models alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Graph:
    """Who produces and who consumes each tensor of a functional model (tensors keyed by ``id``)."""

    nodes: tuple  # keras Node objects in execution order (input nodes excluded)
    producer: dict  # tensor id -> layer
    consumers: dict  # tensor id -> list of layers (a model output counts as a consumer named None)
    calls: dict  # layer name -> number of nodes of that layer in the model

    def single_input(self, layer):
        """The one KerasTensor ``layer`` is called on, or None (several inputs, several calls)."""
        node = self.node_of(layer)
        if node is None or len(node.keras_inputs) != 1:
            return None
        return node.keras_inputs[0]

    def node_of(self, layer):
        """The only node of ``layer`` in the model, or None when it is called more than once."""
        if self.calls.get(layer.name) != 1:
            return None
        return next(n for n in self.nodes if n.layer is layer)

    def only_consumer(self, tensor):
        """The one layer consuming ``tensor``, or None (several consumers, or it is a model output)."""
        users = self.consumers.get(id(tensor), [])
        return users[0] if len(users) == 1 and users[0] is not None else None


def execution_order(model) -> list:
    """The model's non-input nodes, producers before consumers."""
    return [
        node
        for depth in sorted(model._nodes_by_depth, reverse=True)
        for node in model._nodes_by_depth[depth]
        if not node.is_input
    ]


def read_graph(model) -> Graph:
    """Read ``model``'s graph from its nodes."""
    import tensorflow as tf

    nodes = execution_order(model)
    producer, consumers, calls = {}, {}, {}
    for node in nodes:
        calls[node.layer.name] = calls.get(node.layer.name, 0) + 1
        for t in tf.nest.flatten(node.outputs):
            producer[id(t)] = node.layer
        for t in node.keras_inputs:
            consumers.setdefault(id(t), []).append(node.layer)
    for t in tf.nest.flatten(model.outputs):
        consumers.setdefault(id(t), []).append(None)
    return Graph(tuple(nodes), producer, consumers, calls)


def is_graph_model(keras, layer) -> bool:
    """True for a functional/Sequential Keras model with a graph (one that can be inlined)."""
    return isinstance(layer, keras.Model) and bool(getattr(layer, "_is_graph_network", False))


def rebuild(keras, model, call_layer: Callable | None = None, name: str | None = None):
    """A new functional model on ``model``'s own input tensors, re-running its graph node by node.

    Nested functional models are inlined (tfmot cannot quantize a model inside a model). ``call_layer(layer,
    args, kwargs, run)`` may replace a layer call; ``run()`` performs the original call. Layers that are not
    replaced are reused (the new model shares their weights).
    """
    import tensorflow as tf

    def default(layer, args, kwargs, run):
        return run()

    hook = call_layer or default
    owners: dict[str, object] = {}
    weights_from: dict[int, object] = {}  # id(copy) -> layer whose weights it takes once built

    def unique(layer):
        """``layer``, or a copy under a new name when an inlined model reuses a name the outer model has."""
        owner = owners.setdefault(layer.name, layer)
        if owner is layer:
            return layer
        copy = type(layer).from_config({**layer.get_config(), "name": f"{layer.name}_{len(owners)}"})
        owners[copy.name] = copy
        weights_from[id(copy)] = layer
        return copy

    def call(layer, args, kwargs):
        target = unique(layer)
        out = target(*args, **kwargs)
        source = weights_from.pop(id(target), None)
        if source is not None:
            target.set_weights(source.get_weights())
        return out

    def run_graph(graph_model, inputs: list):
        tmap = {id(t): nt for t, nt in zip(graph_model.inputs, inputs)}

        def mapped(structure):
            # ids of live KerasTensors (the model holds them) cannot collide with any other live argument
            return tf.nest.map_structure(lambda v: tmap.get(id(v), v), structure)

        for node in execution_order(graph_model):
            args, kwargs = mapped(node.call_args), mapped(node.call_kwargs)
            layer = node.layer
            if is_graph_model(keras, layer):
                inner = tf.nest.flatten(args[0] if args else next(iter(kwargs.values())))
                out = run_graph(layer, inner)
            else:
                out = hook(layer, args, kwargs, lambda layer=layer, a=args, k=kwargs: call(layer, a, k))
            for t, nt in zip(tf.nest.flatten(node.outputs), tf.nest.flatten(out)):
                tmap[id(t)] = nt
        return tf.nest.map_structure(lambda t: tmap[id(t)], graph_model._nested_outputs)

    outputs = run_graph(model, list(model.inputs))
    return keras.Model(model.inputs, outputs, name=name or model.name)
