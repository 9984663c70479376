//! Cases checked against Go 1.26's `text/template` run the way kubectl runs it (the oracle in
//! the development crate): `expected` is exactly what Go printed, or its error text.

pub(super) struct Case {
    pub template: &'static str,
    /// A JSON document, as apimachinery's `json.Unmarshal` into `map[string]interface{}` sees it
    /// (whole numbers `int64`, others `float64`), as kubectl's template printer decodes it.
    pub data: &'static str,
    /// `missingkey=error` rather than kubectl's default `missingkey=default`.
    pub strict: bool,
    pub expected: Result<&'static str, &'static str>,
}

pub(super) const POD: &str = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-1\",\"namespace\":\"default\",\"labels\":{\"app\":\"web\",\"tier\":\"x\"},\"annotations\":null,\"uid\":\"abc\"},\"spec\":{\"replicas\":3,\"big\":1000000,\"ratio\":0.25,\"neg\":-2.5,\"small\":1e-05,\"flag\":true,\"off\":false,\"containers\":[{\"name\":\"a\",\"image\":\"nginx:1\",\"ports\":[{\"containerPort\":80}]},{\"name\":\"b\",\"image\":\"redis\",\"ports\":[]}],\"empty\":[],\"emptymap\":{},\"nil\":null,\"s\":\"héllo\",\"secret\":\"aGVsbG8gd29ybGQ=\",\"tags\":[\"x\",\"y\",\"z\"],\"mixed\":[1,\"s\",null,true,{\"k\":1}],\"html\":\"<a href='x'>&\\\"</a>\",\"num\":42,\"str3\":\"3\"}}";

/// Values, fields, printing, control structures, variables and templates.
pub(super) const CASES: &[Case] = &[
    Case { template: "{{.metadata.name}}", data: POD, strict: false, expected: Ok("web-1") },
    Case { template: "{{.kind}}/{{.metadata.namespace}}", data: POD, strict: false, expected: Ok("Pod/default") },
    Case { template: "plain text only", data: POD, strict: false, expected: Ok("plain text only") },
    Case { template: "", data: POD, strict: false, expected: Ok("") },
    Case {
        template: "{{.spec.replicas}} {{.spec.big}} {{.spec.ratio}} {{.spec.neg}} {{.spec.small}}",
        data: POD,
        strict: false,
        expected: Ok("3 1000000 0.25 -2.5 1e-05"),
    },
    Case { template: "{{.metadata.labels}}", data: POD, strict: false, expected: Ok("map[app:web tier:x]") },
    Case { template: "{{.spec.tags}}", data: POD, strict: false, expected: Ok("[x y z]") },
    Case { template: "{{.spec.mixed}}", data: POD, strict: false, expected: Ok("[1 s <nil> true map[k:1]]") },
    Case {
        template: "{{.spec.containers}}",
        data: POD,
        strict: false,
        expected: Ok("[map[image:nginx:1 name:a ports:[map[containerPort:80]]] map[image:redis name:b ports:[]]]"),
    },
    Case {
        template: "{{.spec.nil}}|{{.metadata.annotations}}|{{.spec.missing}}",
        data: POD,
        strict: false,
        expected: Ok("<no value>|<no value>|<no value>"),
    },
    Case { template: "{{.spec.missing.deeper}}", data: POD, strict: false, expected: Ok("<no value>") },
    Case {
        template: "{{.spec.nil.deeper}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:7: executing \"output\" at <.spec.nil.deeper>: nil pointer evaluating interface {}.deeper",
        ),
    },
    Case {
        template: "{{.spec.replicas.x}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:7: executing \"output\" at <.spec.replicas.x>: can't evaluate field x in type interface {}",
        ),
    },
    Case {
        template: "{{.spec.missing}}",
        data: POD,
        strict: true,
        expected: Err(
            "template: output:1:7: executing \"output\" at <.spec.missing>: map has no entry for key \"missing\"",
        ),
    },
    Case {
        template: "{{.spec.missing.deeper}}",
        data: POD,
        strict: true,
        expected: Err(
            "template: output:1:7: executing \"output\" at <.spec.missing.deeper>: map has no entry for key \"missing\"",
        ),
    },
    Case { template: "{{.spec.nil}}", data: POD, strict: true, expected: Ok("<no value>") },
    Case { template: "{{.}}", data: "{\"a\":1,\"b\":[1,2]}", strict: false, expected: Ok("map[a:1 b:[1 2]]") },
    Case {
        template: "{{.spec.flag}} {{.spec.off}} {{.spec.emptymap}} {{.spec.empty}}",
        data: POD,
        strict: false,
        expected: Ok("true false map[] []"),
    },
    Case { template: "a  {{- .kind -}}  b", data: POD, strict: false, expected: Ok("aPodb") },
    Case { template: "a {{/* comment */}} b {{- /* c2 */ -}} c", data: POD, strict: false, expected: Ok("a  bc") },
    Case { template: "{{- .kind}}\n  \n{{- .metadata.name }}", data: POD, strict: false, expected: Ok("Podweb-1") },
    Case { template: "x{{.kind -}}\n\n y", data: POD, strict: false, expected: Ok("xPody") },
    Case { template: "{{.metadata.name | printf \"%s!\"}}", data: POD, strict: false, expected: Ok("web-1!") },
    Case { template: "{{$x := .metadata.name}}{{$x}}", data: POD, strict: false, expected: Ok("web-1") },
    Case { template: "{{$x := 1}}{{$x = 2}}{{$x}}", data: POD, strict: false, expected: Ok("2") },
    Case { template: "{{$}}", data: "{\"a\":\"b\"}", strict: false, expected: Ok("map[a:b]") },
    Case { template: "{{with $x := .spec}}{{$x.replicas}}{{end}}", data: POD, strict: false, expected: Ok("3") },
    Case { template: "{{$x := .spec.containers}}{{(index $x 0).name}}", data: POD, strict: false, expected: Ok("a") },
    Case { template: "{{(.spec).replicas}}", data: POD, strict: false, expected: Ok("3") },
    Case { template: "{{(index .spec.containers 1).image}}", data: POD, strict: false, expected: Ok("redis") },
    Case { template: "{{$.kind}}", data: POD, strict: false, expected: Ok("Pod") },
    Case { template: "{{if .spec.flag}}yes{{else}}no{{end}}", data: POD, strict: false, expected: Ok("yes") },
    Case {
        template: "{{if .spec.off}}yes{{else if .spec.replicas}}rep{{else}}no{{end}}",
        data: POD,
        strict: false,
        expected: Ok("rep"),
    },
    Case { template: "{{if .spec.missing}}yes{{else}}no{{end}}", data: POD, strict: false, expected: Ok("no") },
    Case {
        template: "{{if .spec.empty}}y{{else}}n{{end}}{{if .spec.emptymap}}y{{else}}n{{end}}{{if .spec.s}}y{{end}}",
        data: POD,
        strict: false,
        expected: Ok("nny"),
    },
    Case {
        template: "{{if and .spec.flag .spec.replicas}}both{{end}}|{{and .spec.flag .spec.replicas}}|{{or .spec.off .spec.missing}}|{{or .spec.off \"\" 0}}",
        data: POD,
        strict: false,
        expected: Ok("both|3|<no value>|0"),
    },
    Case {
        template: "{{not .spec.flag}} {{not .spec.missing}} {{not 0}}",
        data: POD,
        strict: false,
        expected: Ok("false true true"),
    },
    Case { template: "{{with .metadata.labels}}{{.app}}{{end}}", data: POD, strict: false, expected: Ok("web") },
    Case { template: "{{with .spec.missing}}y{{else}}none{{end}}", data: POD, strict: false, expected: Ok("none") },
    Case {
        template: "{{with .spec.off}}y{{else with .spec.replicas}}{{.}}{{end}}",
        data: POD,
        strict: false,
        expected: Ok("3"),
    },
    Case { template: "{{range .spec.tags}}[{{.}}]{{end}}", data: POD, strict: false, expected: Ok("[x][y][z]") },
    Case {
        template: "{{range $i, $t := .spec.tags}}{{$i}}={{$t}} {{end}}",
        data: POD,
        strict: false,
        expected: Ok("0=x 1=y 2=z "),
    },
    Case {
        template: "{{range $k, $v := .metadata.labels}}{{$k}}:{{$v}};{{end}}",
        data: POD,
        strict: false,
        expected: Ok("app:web;tier:x;"),
    },
    Case { template: "{{range .metadata.labels}}{{.}},{{end}}", data: POD, strict: false, expected: Ok("web,x,") },
    Case { template: "{{range .spec.empty}}x{{else}}empty{{end}}", data: POD, strict: false, expected: Ok("empty") },
    Case { template: "{{range .spec.missing}}x{{else}}none{{end}}", data: POD, strict: false, expected: Ok("none") },
    Case {
        template: "{{range .spec.containers}}{{.name}}:{{range .ports}}{{.containerPort}}{{end}};{{end}}",
        data: POD,
        strict: false,
        expected: Ok("a:80;b:;"),
    },
    Case { template: "{{range 3}}{{.}}{{end}}", data: POD, strict: false, expected: Ok("012") },
    Case { template: "{{range $i := 3}}{{$i}}{{end}}", data: POD, strict: false, expected: Ok("012") },
    Case {
        template: "{{range .spec.tags}}{{if eq . \"y\"}}{{break}}{{end}}{{.}}{{end}}",
        data: POD,
        strict: false,
        expected: Ok("x"),
    },
    Case {
        template: "{{range .spec.tags}}{{if eq . \"y\"}}{{continue}}{{end}}{{.}}{{end}}",
        data: POD,
        strict: false,
        expected: Ok("xz"),
    },
    Case { template: "{{range .spec.replicas}}x{{end}}", data: POD, strict: false, expected: Ok("xxx") },
    Case {
        template: "{{range .spec.s}}x{{end}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1:13: executing \"output\" at <.spec.s>: range can't iterate over héllo"),
    },
    Case {
        template: "{{range $i, $e := 3}}x{{end}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:18: executing \"output\" at <3>: can't use 3 to iterate over more than one variable",
        ),
    },
    Case {
        template: "{{range .spec.mixed}}<{{.}}>{{end}}",
        data: POD,
        strict: false,
        expected: Ok("<1><s><<no value>><true><map[k:1]>"),
    },
    Case {
        template: "{{$x := 0}}{{range .spec.tags}}{{$x = .}}{{end}}{{$x}}",
        data: POD,
        strict: false,
        expected: Ok("z"),
    },
    Case {
        template: "{{define \"T\"}}[{{.}}]{{end}}{{template \"T\" .kind}}",
        data: POD,
        strict: false,
        expected: Ok("[Pod]"),
    },
    Case {
        template: "{{define \"T\"}}{{.name}}{{end}}{{range .spec.containers}}{{template \"T\" .}}{{end}}",
        data: POD,
        strict: false,
        expected: Ok("ab"),
    },
    Case { template: "{{block \"B\" .kind}}<{{.}}>{{end}}", data: POD, strict: false, expected: Ok("<Pod>") },
    Case {
        template: "{{template \"nope\"}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:11: executing \"output\" at <{{template \"nope\"}}>: template \"nope\" not defined",
        ),
    },
    Case {
        template: "{{define \"T\"}}{{.x.y}}{{end}}{{template \"T\" .spec}}",
        data: POD,
        strict: false,
        expected: Ok("<no value>"),
    },
    Case {
        template: "{{index .spec.tags 1}} {{index .metadata.labels \"app\"}} {{index .spec.containers 0 \"name\"}}",
        data: POD,
        strict: false,
        expected: Ok("y web a"),
    },
    Case { template: "{{index .metadata.labels \"nope\"}}", data: POD, strict: false, expected: Ok("<no value>") },
    Case {
        template: "{{index .spec.tags 5}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <index .spec.tags 5>: error calling index: index out of range: 5",
        ),
    },
    Case {
        template: "{{index .spec.tags 3}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <index .spec.tags 3>: error calling index: reflect: slice index out of range",
        ),
    },
    Case { template: "{{index .spec.s 0}}", data: POD, strict: false, expected: Ok("104") },
    Case {
        template: "{{index .spec.tags \"a\"}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <index .spec.tags \"a\">: error calling index: cannot index slice/array with type string",
        ),
    },
    Case {
        template: "{{index .metadata.labels 1}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <index .metadata.labels 1>: error calling index: value has type int; should be string",
        ),
    },
    Case {
        template: "{{index .spec.replicas 1}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <index .spec.replicas 1>: error calling index: can't index item of type int64",
        ),
    },
    Case {
        template: "{{index .spec.missing 1}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <index .spec.missing 1>: error calling index: index of untyped nil",
        ),
    },
    Case {
        template: "{{index .spec.nil \"a\"}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <index .spec.nil \"a\">: error calling index: index of untyped nil",
        ),
    },
    Case {
        template: "{{len .spec.tags}} {{len .metadata.labels}} {{len .spec.s}} {{len .spec.empty}}",
        data: POD,
        strict: false,
        expected: Ok("3 2 6 0"),
    },
    Case {
        template: "{{len .spec.replicas}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <len .spec.replicas>: error calling len: len of type int64",
        ),
    },
    Case {
        template: "{{len .spec.missing}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <len .spec.missing>: error calling len: reflect: call of reflect.Value.Type on zero Value",
        ),
    },
    Case {
        template: "{{len .spec.nil}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <len .spec.nil>: error calling len: len of nil pointer",
        ),
    },
    Case {
        template: "{{.spec.missing | len}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:18: executing \"output\" at <len>: error calling len: reflect: call of reflect.Value.Type on zero Value",
        ),
    },
    Case {
        template: "{{slice .spec.tags 1}} {{slice .spec.tags 1 2}} {{slice .spec.s 1 3}} {{slice .spec.tags}}",
        data: POD,
        strict: false,
        expected: Ok("[y z] [y] é [x y z]"),
    },
    Case {
        template: "{{slice .spec.tags 2 1}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <slice .spec.tags 2 1>: error calling slice: invalid slice index: 2 > 1",
        ),
    },
    Case {
        template: "{{slice .spec.replicas 1}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <slice .spec.replicas 1>: error calling slice: can't slice item of type int64",
        ),
    },
    Case { template: "{{printf \"%d\" .spec.replicas}}", data: POD, strict: false, expected: Ok("3") },
    Case {
        template: "{{printf \"%v|%s|%q|%T\" .spec.replicas .metadata.name .metadata.name .spec.replicas}}",
        data: POD,
        strict: false,
        expected: Ok("3|web-1|\"web-1\"|int64"),
    },
    Case {
        template: "{{printf \"%5s|%-5s|%.2s|%05d|%x|%X|%o|%b|%c|%U\" \"ab\" \"cd\" \"xyz\" 42 255 255 8 5 65 65}}",
        data: POD,
        strict: false,
        expected: Ok("   ab|cd   |xy|00042|ff|FF|10|101|A|U+0041"),
    },
    Case {
        template: "{{printf \"%.2f|%f|%e|%g|%.3g|%8.3f|%-8.2f|%+.1e|%E|%G\" .spec.ratio .spec.ratio .spec.big .spec.big .spec.ratio .spec.neg .spec.ratio .spec.big .spec.small .spec.small}}",
        data: POD,
        strict: false,
        expected: Ok(
            "0.25|0.250000|%!e(int64=1000000)|%!g(int64=1000000)|0.25|  -2.500|0.25    |%!e(int64=+1000000)|1.000000E-05|1E-05",
        ),
    },
    Case {
        template: "{{printf \"%s\"}}|{{printf \"%s\" 1 2}}|{{printf \"%!\"}}|{{printf \"%\"}}|{{printf \"%%\"}}",
        data: POD,
        strict: false,
        expected: Ok("%!s(MISSING)|%!s(int=1)%!(EXTRA int=2)|%!!(MISSING)|%!(NOVERB)|%"),
    },
    Case {
        template: "{{printf \"%v %+v %#v\" .metadata.labels .spec.tags .spec.mixed}}",
        data: POD,
        strict: false,
        expected: Ok(
            "map[app:web tier:x] [x y z] []interface {}{1, \"s\", interface {}(nil), true, map[string]interface {}{\"k\":1}}",
        ),
    },
    Case {
        template: "{{printf \"%d\" .spec.tags}} {{printf \"%s\" .spec.containers}}",
        data: POD,
        strict: false,
        expected: Ok(
            "[%!d(string=x) %!d(string=y) %!d(string=z)] [map[image:nginx:1 name:a ports:[map[containerPort:%!s(int64=80)]]] map[image:redis name:b ports:[]]]",
        ),
    },
    Case {
        template: "{{printf \"%t %t %v\" .spec.flag 1 nil}}",
        data: POD,
        strict: false,
        expected: Ok("true %!t(int=1) <nil>"),
    },
    Case {
        template: "{{printf \"%q %x %X % x %#x\" .spec.s \"hi\" \"hi\" \"hi\" \"hi\"}}",
        data: POD,
        strict: false,
        expected: Ok("\"héllo\" 6869 6869 68 69 0x6869"),
    },
    Case {
        template: "{{printf \"%*d|%-*d|%.*f\" 5 1 4 2 2 3.14159}}",
        data: POD,
        strict: false,
        expected: Ok("    1|2   |3.14"),
    },
    Case { template: "{{printf \"%[2]s %[1]s\" \"a\" \"b\"}}", data: POD, strict: false, expected: Ok("b a") },
    Case {
        template: "{{printf \"%T %T %T %T %T %T\" .spec .spec.tags .spec.s .spec.flag .spec.nil 1}}",
        data: POD,
        strict: false,
        expected: Ok("map[string]interface {} []interface {} string bool <nil> int"),
    },
    Case {
        template: "{{printf \"%05s|%.0f|%.1f|%.1f|%.2f\" \"ab\" 2.5 0.25 0.35 1.005}}",
        data: POD,
        strict: false,
        expected: Ok("000ab|2|0.2|0.3|1.00"),
    },
    Case {
        template: "{{printf \"%v\" 1e21}} {{printf \"%v\" 123456789.0}} {{printf \"%g\" 1e-5}} {{printf \"%v\" 0.000012345}}",
        data: POD,
        strict: false,
        expected: Ok("1e+21 1.23456789e+08 1e-05 1.2345e-05"),
    },
    Case {
        template: "{{printf \"%d %d\" 'a' -5}} {{printf \"%q\" 'x'}} {{'a'}}",
        data: POD,
        strict: false,
        expected: Ok("97 -5 'x' 97"),
    },
    Case {
        template: "{{print 1 2 \"a\" \"b\" 3 .spec.nil}}|{{print}}|{{println 1 \"a\" 2}}",
        data: POD,
        strict: false,
        expected: Ok("1 2ab3 <nil>||1 a 2\n"),
    },
];
