#!/usr/bin/env python3
"""Checks the model-server bundles under engines/ against a ComfyUI server's /object_info.

    python3 engines/check_templates.py object_info.json

Get the file from a running ComfyUI (`curl -s http://HOST:8188/object_info > object_info.json`).
The bundles are written against ComfyUI 0.3.75 without node packs; where a server has a template's
node pack installed, that pack's classes are checked like ComfyUI's own.

For every bundle (a folder of engines/ holding atelier.toml and/or comfyui/*.json) it checks:

Templates (comfyui/*.json, API format):
  - the file parses, is an object of nodes, and holds an "_about" object naming the tool, model,
    weights, licence, VRAM estimate, node packs and status ("Not run with its real weights ...");
  - every node has a class_type and an inputs object;
  - every link ["id", n] names a node of the template and an output that node has, and the output's
    type fits the input it feeds (where both classes are known);
  - every class the server has is used with inputs it has (required or optional), with every
    required input given, and with literal values it accepts (list-valued choices such as
    samplers, except model and image file names, which depend on the server; numeric ranges);
  - every class that is not ComfyUI's own (absent, or loaded from custom_nodes) is listed in
    _about.node_packs[*].classes, and no class listed there is ComfyUI's own;
  - every node feeds an output node.

Configuration (atelier.toml, read with tomllib):
  - every [engines.*] has a known kind and what that kind needs;
  - every [tools.X] names a tool of crates/core/src/tools/ and engines of the file, of one kind;
  - inputs name only parameters of that tool (or seed); ComfyUI mappings name nodes of the
    template and inputs those nodes have, image parameters go to a LoadImage node's image, and
    every value a parameter can send (through map, default or as it is) fits the input's type;
  - set keys are "NODE.input" with fitting values; outputs name output nodes of the template;
  - Cog mappings name the model's input and map every required image; onnx routes have no inputs;
  - every template of the bundle is used by a [tools.*] section whose tool it is written for.

Exits 1 with one line per problem, 0 when everything holds.
"""

import json
import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TOOLS_RS = REPO / "crates" / "core" / "src" / "tools" / "table.rs"
# The committed OpenAPI document: each tool's input schema (Tool_<name>) holds its selects'
# values, whichever list or enum of core they come from.
OPENAPI = REPO / "docs" / "openapi.json"
STATUS_PHRASE = "Not run with its real weights"
ABOUT_KEYS = ("tool", "model", "weights", "licence", "vram", "node_packs", "status")
# Inputs whose choices are files on the server (models, uploaded images): not checked here.
FILE_INPUTS = {"ckpt_name", "unet_name", "clip_name", "clip_name1", "clip_name2", "vae_name",
               "lora_name", "control_net_name", "model_name", "image"}
MAPPING_KEYS = {"node", "input", "name", "map", "default"}

problems = []


def problem(where, message):
    problems.append(f"{where}: {message}")


# ----------------------------------------------------------------------------- tools.rs


def balanced(text, start):
    """The text inside the brackets that open at text[start]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    close = pairs[text[start]]
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == '"':
            i = text.index('"', i + 1)
        elif c in pairs:
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                assert c == close, f"unbalanced at {i}"
                return text[start + 1:i]
        i += 1
    raise ValueError("unbalanced brackets")


def split_args(text):
    args, depth, cur, i = [], 0, "", 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = text.index('"', i + 1)
            cur += text[i:j + 1]
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    if cur.strip():
        args.append(cur.strip())
    return args


def parse_params(text, consts, aspects=None):
    """Parameter calls (image/text/select/int/p, SEED) in a params list."""
    params = {}
    for m in re.finditer(r"\b(image|text|select|int|p)\(|\bSEED\b", text):
        if m.group(0) == "SEED":
            params["seed"] = {"type": "number", "integer": True, "range": [0.0, 4294967295.0]}
            continue
        kind = m.group(1)
        args = split_args(balanced(text, m.end() - 1))
        name = args[0].strip('"')
        if kind == "image":
            params[name] = {"type": "image"}
        elif kind == "text":
            params[name] = {"type": "string"}
        elif kind == "int":
            params[name] = {"type": "number", "integer": True,
                            "range": [float(args[1]), float(args[2])]}
        elif kind == "select":
            source = args[1]
            if source.startswith("&["):
                values = re.findall(r'"([^"]*)"', source)
            elif source == "$aspects":
                values = aspects
            else:
                values = consts.get(source)  # a list of core's choices: read from the document
            params[name] = {"type": "select", "values": values}
        else:  # p(name, ParamType::X {...}, required, default)
            ty = re.search(r"ParamType::(\w+)", args[1]).group(1)
            params[name] = {"type": {"Number": "number", "Boolean": "boolean", "String": "string",
                                     "Image": "image"}.get(ty, ty.lower()),
                            "integer": "integer: true" in args[1]}
            bounds = re.search(r"min: ([\d._]+), max: ([\d._]+)", args[1])
            if bounds:
                params[name]["range"] = [float(bounds.group(1).replace("_", "")),
                                         float(bounds.group(2).replace("_", ""))]
    return params


def read_tools():
    text = TOOLS_RS.read_text()
    consts = {m.group(1): re.findall(r'"([^"]*)"', m.group(2))
              for m in re.finditer(r"const (\w+): &\[&str\] = &\[(.*?)\];", text, re.S)}
    macro = re.search(r"macro_rules! pro_params \{", text)
    macro_body = balanced(text, macro.end() - 1)
    tools = {}
    for m in re.finditer(r"static \w+: ToolSpec = ToolSpec \{", text):
        body = balanced(text, m.end() - 1)
        name = re.search(r'name: "(\w+)"', body).group(1)
        primary = re.search(r'primary_image: (?:Some\("(\w+)"\)|None)', body).group(1)
        pm = re.search(r"params: (&\[|pro_params!\()", body)
        if pm.group(1) == "&[":
            params = parse_params(balanced(body, pm.end() - 1), consts)
        else:
            args = split_args(balanced(body, pm.end() - 1))
            params = parse_params(macro_body, consts, aspects=consts[args[0]])
            params.update(parse_params(",".join(args[1:]), consts))
            params["seed"] = params.pop("seed")
        tools[name] = {"params": params, "primary_image": primary}
    schemas = json.loads(OPENAPI.read_text())["components"]["schemas"]
    for name, tool in tools.items():
        for pname, param in tool["params"].items():
            if param["type"] == "select":
                param["values"] = schemas[f"Tool_{name}"]["properties"][pname]["enum"]
    if len(tools) != 12:
        sys.exit(f"check_templates.py: read {len(tools)} tools from {TOOLS_RS}, expected 12")
    return tools


# ----------------------------------------------------------------------------- object_info


def is_native(info, cls):
    """A class of ComfyUI itself (nodes.py, comfy_extras), not of a node pack in custom_nodes/."""
    return cls in info and not str(info[cls].get("python_module", "")).startswith("custom_nodes")


def input_specs(info, cls):
    spec = info[cls]["input"]
    out = {}
    for group in ("required", "optional"):
        for name, d in (spec.get(group) or {}).items():
            out[name] = (group, d)
    return out


def input_type(d):
    """('COMBO', options) | ('INT', extra) | ('STRING', extra) | ... for one input definition."""
    head = d[0]
    extra = d[1] if len(d) > 1 and isinstance(d[1], dict) else {}
    if isinstance(head, list):
        return "COMBO", head
    if head == "COMBO":
        return "COMBO", extra.get("options", [])
    return head, extra


def types_fit(received, wanted):
    if received == "*" or wanted == "*":
        return True
    return bool({t.strip() for t in str(received).split(",")} & {t.strip() for t in str(wanted).split(",")})


def is_link(v):
    return isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], int)


def value_fits(where, cls, inp, ty, extra, value, file_input):
    """A literal value against an input's type; returns a message or None."""
    if ty == "COMBO":
        if not isinstance(value, str):
            return f"{cls}.{inp} takes one of its choices, not {value!r}"
        if not file_input and value not in extra:
            return f"{cls}.{inp}: {value!r} is not one of {extra}"
        return None
    if ty in ("INT", "FLOAT"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{cls}.{inp} takes a number, not {value!r}"
        if ty == "INT" and isinstance(value, float) and not value.is_integer():
            return f"{cls}.{inp} takes an integer, not {value!r}"
        if "min" in extra and value < extra["min"]:
            return f"{cls}.{inp}: {value!r} is below its minimum {extra['min']}"
        if "max" in extra and value > extra["max"]:
            return f"{cls}.{inp}: {value!r} is above its maximum {extra['max']}"
        return None
    if ty == "BOOLEAN":
        return None if isinstance(value, bool) else f"{cls}.{inp} takes true or false, not {value!r}"
    if ty == "STRING":
        # ComfyUI turns numbers and booleans into text (str()) for STRING inputs.
        return None if isinstance(value, (str, int, float, bool)) else f"{cls}.{inp} takes text, not {value!r}"
    return f"{cls}.{inp} takes a link of type {ty}, not the literal {value!r}"


# ----------------------------------------------------------------------------- templates


def check_template(path, info):
    where = str(path.relative_to(REPO))
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        problem(where, f"does not parse: {e}")
        return None
    if not isinstance(data, dict):
        problem(where, "is not an object of nodes (API format)")
        return None
    about = data.get("_about")
    pack_classes = set()
    if not isinstance(about, dict):
        problem(where, "has no \"_about\" object")
        about = {}
    else:
        for key in ABOUT_KEYS:
            if not about.get(key) and about.get(key) != []:
                problem(where, f"_about.{key} is missing")
        if STATUS_PHRASE not in str(about.get("status", "")):
            problem(where, f"_about.status does not say \"{STATUS_PHRASE} ...\"")
        if "estimate" not in str(about.get("vram", "")) and "README" not in str(about.get("vram", "")) \
                and "reports" not in str(about.get("vram", "")):
            problem(where, "_about.vram does not say whether it is an estimate or where it comes from")
        packs = about.get("node_packs", [])
        if not isinstance(packs, list):
            problem(where, "_about.node_packs is not a list")
            packs = []
        for i, pack in enumerate(packs):
            if not isinstance(pack, dict) or not pack.get("repository") or not isinstance(pack.get("classes"), list):
                problem(where, f"_about.node_packs[{i}] needs name, repository and a \"classes\" list")
                continue
            for cls in pack["classes"]:
                if is_native(info, cls):
                    problem(where, f"_about.node_packs[{i}] lists {cls}, which ComfyUI has natively")
                pack_classes.add(cls)
    if "nodes" in data and "links" in data:
        problem(where, "is a UI export; save it with \"Export (API)\"")
        return None
    nodes = {k: v for k, v in data.items() if not k.startswith("_")}
    if not nodes:
        problem(where, "has no nodes")
        return None
    for nid, node in nodes.items():
        if not isinstance(node, dict) or not isinstance(node.get("class_type"), str) \
                or not isinstance(node.get("inputs"), dict):
            problem(where, f"node {nid} needs a class_type and an inputs object")
            return None
    outputs_of = {}
    for nid, node in nodes.items():
        cls = node["class_type"]
        if not is_native(info, cls) and cls not in pack_classes:
            problem(where, f"node {nid}: {cls} is not a node of ComfyUI itself and not listed in "
                           f"_about.node_packs[*].classes")
        if cls in info:
            outputs_of[nid] = info[cls]["output"]
    for nid, node in nodes.items():
        cls = node["class_type"]
        specs = input_specs(info, cls) if cls in info else None
        for inp, value in node["inputs"].items():
            at = f"{where}: node {nid} ({cls})"
            spec = specs.get(inp) if specs is not None else None
            if specs is not None and spec is None:
                problem(at, f"has no input {inp} (it has {', '.join(specs) or 'none'})")
                continue
            if is_link(value):
                src, index = value
                if src not in nodes:
                    problem(at, f"{inp} links to node {src}, which the template lacks")
                    continue
                if src in outputs_of:
                    outs = outputs_of[src]
                    if index >= len(outs):
                        problem(at, f"{inp} links to output {index} of node {src}, which has {len(outs)}")
                        continue
                    if spec is not None:
                        ty, _ = input_type(spec[1])
                        if ty != "COMBO" and not types_fit(outs[index], ty):
                            problem(at, f"{inp} takes {ty} but node {src} output {index} is {outs[index]}")
                continue
            if isinstance(value, list):
                problem(at, f"{inp}: {value!r} is neither a link [\"id\", n] nor a value")
                continue
            if spec is not None:
                ty, extra = input_type(spec[1])
                msg = value_fits(at, cls, inp, ty, extra, value, inp in FILE_INPUTS)
                if msg:
                    problem(at, msg)
        if specs is not None:
            for inp, (group, _) in specs.items():
                if group == "required" and inp not in node["inputs"]:
                    problem(f"{where}: node {nid} ({cls})", f"lacks its required input {inp}")
    # Every node feeds an output node.
    outs = [nid for nid, n in nodes.items() if n["class_type"] in info and info[n["class_type"]].get("output_node")]
    if not outs:
        problem(where, "has no output node (SaveImage, SaveVideo, ...)")
    feeding, todo = set(outs), list(outs)
    while todo:
        for v in nodes[todo.pop()]["inputs"].values():
            if is_link(v) and v[0] in nodes and v[0] not in feeding:
                feeding.add(v[0])
                todo.append(v[0])
    for nid in nodes:
        if nid not in feeding:
            problem(where, f"node {nid} ({nodes[nid]['class_type']}) feeds no output node")
    return {"nodes": nodes, "about": about}


# ----------------------------------------------------------------------------- atelier.toml


def possible_values(param, mapping):
    """Every value this parameter can send through this mapping (None: any text / any number)."""
    ty = param["type"]
    mapped = mapping.get("map", {})
    values = []
    if ty == "select":
        values = [mapped.get(v, v) for v in param["values"]]
    elif ty == "boolean":
        values = [True, False]
    elif ty == "number":
        low, high = param.get("range", [1.0, 1.0])
        values = [int(low), int(high)] if param.get("integer") else [low, high]
    elif ty == "string":
        values = ["text"] + list(mapped.values())
    if "default" in mapping:
        values.append(mapping["default"])
    return values


def check_bundle_toml(bundle, tools, info, templates):
    path = bundle / "atelier.toml"
    where = str(path.relative_to(REPO))
    try:
        config = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        problem(where, f"does not parse: {e}")
        return
    unknown = set(config) - {"engines", "tools"}
    if unknown:
        problem(where, f"holds sections other than [engines] and [tools]: {sorted(unknown)}")
    engines = config.get("engines", {})
    for name, e in engines.items():
        at = f"{where}: engines.{name}"
        kind = e.get("kind")
        if kind not in ("comfyui", "cog", "onnx"):
            problem(at, f"kind must be comfyui, cog or onnx, not {kind!r}")
        elif kind in ("comfyui", "cog") and not re.match(r"https?://", str(e.get("url", ""))):
            problem(at, "url must start with http:// or https://")
        elif kind == "onnx":
            size = e.get("input_size")
            if not e.get("model") or not (isinstance(size, list) and len(size) == 2):
                problem(at, "an onnx engine needs model and input_size = [width, height]")
            if e.get("output", "mask") not in ("mask", "image"):
                problem(at, "output must be mask or image")
    used = {}
    for tool_name, t in config.get("tools", {}).items():
        at = f"{where}: tools.{tool_name}"
        if tool_name not in tools:
            problem(at, f"is not a tool (the tools: {', '.join(tools)})")
            continue
        tool = tools[tool_name]
        names = t.get("engine", "builtin")
        names = [names] if isinstance(names, str) else names
        if names == ["builtin"]:
            continue  # the built-in engine: nothing to map
        kinds = set()
        for n in names:
            if n not in engines:
                problem(at, f"engine {n!r} is not an [engines.*] entry of this file")
            else:
                kinds.add(engines[n]["kind"])
        if len(kinds) != 1:
            if kinds:
                problem(at, "its engines are not all of one kind")
            continue
        kind = kinds.pop()
        inputs = t.get("inputs", {})
        for param, m in inputs.items():
            if param != "seed" and param not in tool["params"]:
                problem(at, f"inputs.{param}: {tool_name} has no such parameter "
                            f"(its parameters: {', '.join(tool['params'])})")
            if not isinstance(m, dict) or set(m) - MAPPING_KEYS:
                problem(at, f"inputs.{param}: a mapping has only the keys {sorted(MAPPING_KEYS)}")
        inputs = {param: m for param, m in inputs.items()
                  if (param == "seed" or param in tool["params"]) and isinstance(m, dict)}
        if kind == "onnx":
            if inputs or t.get("set"):
                problem(at, "an onnx route takes no inputs or set")
            if not tool["primary_image"]:
                problem(at, f"{tool_name} has no image input for an onnx model")
            continue
        if kind == "cog":
            for param, m in inputs.items():
                if not m.get("name") or "node" in m or "input" in m:
                    problem(at, f"inputs.{param}: a Cog mapping names the model's input (name) only")
            for pname, p in tool["params"].items():
                if p["type"] == "image" and pname == tool["primary_image"] and pname not in inputs:
                    problem(at, f"the image parameter {pname} is not mapped")
            if not t.get("outputs", {}).get("path"):
                problem(at, "outputs.path is required for a Cog route")
            continue
        # ComfyUI
        template_path = REPO / t.get("template", "")
        if not t.get("template") or not template_path.is_file():
            problem(at, f"template {t.get('template')!r} is not a file (paths are relative to the repository root)")
            continue
        template = templates.get(template_path.resolve())
        if template is None:
            template = check_template(template_path, info)
            templates[template_path.resolve()] = template
        if template is None:
            continue
        used.setdefault(template_path.resolve(), []).append(tool_name)
        if template["about"].get("tool") != tool_name:
            problem(at, f"uses {t['template']}, whose _about.tool is {template['about'].get('tool')!r}")
        nodes = template["nodes"]

        def target(what, node, inp):
            if node not in nodes:
                problem(at, f"{what}: the template has no node {node}")
                return None
            cls = nodes[node]["class_type"]
            if cls not in info:
                return cls, None  # a node pack's class: its inputs are not known here
            spec = input_specs(info, cls).get(inp)
            if spec is None:
                problem(at, f"{what}: node {node} ({cls}) has no input {inp}")
                return None
            return cls, input_type(spec[1])

        for param, m in inputs.items():
            what = f"inputs.{param}"
            if not m.get("node") or not m.get("input") or "name" in m:
                problem(at, f"{what}: a ComfyUI mapping names node and input")
                continue
            found = target(what, str(m["node"]), m["input"])
            if found is None:
                continue
            cls, ty = found
            p = tool["params"].get(param, {"type": "number", "integer": True, "range": [0.0, 4294967295.0]})
            if p["type"] == "image":
                if not (cls.startswith("LoadImage") and m["input"] == "image"):
                    problem(at, f"{what}: an image parameter goes to a LoadImage node's image input (it is uploaded)")
                continue
            if cls.startswith("LoadImage") and m["input"] == "image":
                problem(at, f"{what}: only image parameters go to a LoadImage node's image input")
            if ty is None:
                continue
            for value in possible_values(p, m):
                msg = value_fits(at, cls, m["input"], ty[0], ty[1], value, m["input"] in FILE_INPUTS)
                if msg:
                    problem(at, f"{what} can send {value!r}: {msg}")
        for key, value in t.get("set", {}).items():
            what = f"set.{key}"
            if "." not in key:
                problem(at, f"{what}: ComfyUI constants are written \"NODE.input\"")
                continue
            node, inp = key.split(".", 1)
            found = target(what, node, inp)
            if found and found[1] is not None:
                msg = value_fits(at, found[0], inp, found[1][0], found[1][1], value, inp in FILE_INPUTS)
                if msg:
                    problem(at, f"{what}: {msg}")
        out_nodes = t.get("outputs", {}).get("nodes", [])
        if not out_nodes:
            problem(at, "outputs.nodes is required for a ComfyUI route")
        for node in out_nodes:
            if node not in nodes:
                problem(at, f"outputs.nodes: the template has no node {node}")
                continue
            cls = nodes[node]["class_type"]
            if cls in info and not info[cls].get("output_node"):
                problem(at, f"outputs.nodes: node {node} ({cls}) is not an output node")
            elif "filename_prefix" not in nodes[node]["inputs"]:
                problem(at, f"outputs.nodes: node {node} ({cls}) has no filename_prefix for Atelier to set")
    for tpl in sorted((bundle / "comfyui").glob("*.json")):
        if tpl.resolve() not in used:
            problem(str(tpl.relative_to(REPO)), f"is used by no [tools.*] section of {where}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    try:
        info = json.loads(Path(sys.argv[1]).read_text())
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"check_templates.py: cannot read {sys.argv[1]}: {e}")
    for required in ("LoadImage", "SaveImage", "KSampler"):
        if required not in info:
            sys.exit(f"check_templates.py: {sys.argv[1]} is not a ComfyUI /object_info (no {required})")
    tools = read_tools()
    bundles = sorted(p for p in HERE.iterdir() if p.is_dir() and ((p / "atelier.toml").exists() or (p / "comfyui").is_dir()))
    templates = {}
    count = 0
    for bundle in bundles:
        for tpl in sorted((bundle / "comfyui").glob("*.json")):
            templates[tpl.resolve()] = check_template(tpl, info)
            count += 1
        if (bundle / "atelier.toml").exists():
            check_bundle_toml(bundle, tools, info, templates)
        else:
            problem(str(bundle.relative_to(REPO)), "has templates but no atelier.toml")
    if problems:
        for p in problems:
            print(p)
        print(f"{len(problems)} problem(s) in {len(bundles)} bundle(s)")
        sys.exit(1)
    print(f"ok: {count} templates and {len(bundles)} atelier.toml files in {len(bundles)} bundles "
          f"({', '.join(b.name for b in bundles)}) fit ComfyUI's /object_info ({len(info)} node classes) "
          f"and the tools of {TOOLS_RS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
