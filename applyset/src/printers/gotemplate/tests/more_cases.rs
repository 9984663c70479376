//! Functions, `printf`, comparisons and error cases, checked against Go like [`super::cases`].

use super::cases::{Case, POD};

pub(super) const MORE_CASES: &[Case] = &[
    Case {
        template: "{{print .spec.missing}} {{printf \"%v\" .spec.missing}}",
        data: POD,
        strict: false,
        expected: Ok("<nil> <nil>"),
    },
    Case { template: "{{.spec.replicas | printf \"%v-%v\" 1}}", data: POD, strict: false, expected: Ok("1-3") },
    Case {
        template: "{{eq .spec.replicas 3.0}} {{eq .spec.replicas 3}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <eq .spec.replicas 3.0>: error calling eq: incompatible types for comparison: int64 and float64",
        ),
    },
    Case {
        template: "{{eq .metadata.name \"web-1\"}} {{eq .kind \"A\" \"B\" \"Pod\"}} {{ne .kind \"Pod\"}}",
        data: POD,
        strict: false,
        expected: Ok("true true false"),
    },
    Case {
        template: "{{lt 1 2}} {{le 2 2}} {{gt 3 2}} {{ge 1 2}} {{lt \"a\" \"b\"}} {{lt .spec.ratio .spec.replicas}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:61: executing \"output\" at <lt .spec.ratio .spec.replicas>: error calling lt: incompatible types for comparison: float64 and int64",
        ),
    },
    Case { template: "{{lt .spec.replicas 5}}", data: POD, strict: false, expected: Ok("true") },
    Case {
        template: "{{eq .spec.missing .spec.nil}} {{eq .spec.missing \"x\"}}",
        data: POD,
        strict: false,
        expected: Ok("true false"),
    },
    Case {
        template: "{{eq .spec.tags .spec.tags}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <eq .spec.tags .spec.tags>: error calling eq: non-comparable type [x y z]: []interface {}",
        ),
    },
    Case {
        template: "{{eq .metadata.labels .spec.tags}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <eq .metadata.labels .spec.tags>: error calling eq: non-comparable types map[app:web tier:x]: map[string]interface {}, []interface {}: [x y z]",
        ),
    },
    Case {
        template: "{{lt true false}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <lt true false>: error calling lt: invalid type for comparison",
        ),
    },
    Case {
        template: "{{lt .spec.tags 1}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <lt .spec.tags 1>: error calling lt: invalid type for comparison",
        ),
    },
    Case {
        template: "{{eq}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <eq>: wrong number of args for eq: want at least 1 got 0",
        ),
    },
    Case {
        template: "{{eq 1}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <eq 1>: error calling eq: missing argument for comparison",
        ),
    },
    Case {
        template: "{{eq .spec.flag true}} {{eq .spec.str3 3.0}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:25: executing \"output\" at <eq .spec.str3 3.0>: error calling eq: incompatible types for comparison: string and float64",
        ),
    },
    Case {
        template: "{{html .spec.html}}|{{js .spec.html}}|{{urlquery \"a b&c=d/é\"}}",
        data: POD,
        strict: false,
        expected: Ok(
            "&lt;a href=&#39;x&#39;&gt;&amp;&#34;&lt;/a&gt;|\\u003Ca href\\u003D\\'x\\'\\u003E\\u0026\\\"\\u003C/a\\u003E|a+b%26c%3Dd%2F%C3%A9",
        ),
    },
    Case {
        template: "{{html .spec.missing}}|{{html 1 2}}|{{js \"x\" \"y\"}}",
        data: POD,
        strict: false,
        expected: Ok("&lt;no value&gt;|1 2|xy"),
    },
    Case {
        template: "{{.spec.html | html}}",
        data: POD,
        strict: false,
        expected: Ok("&lt;a href=&#39;x&#39;&gt;&amp;&#34;&lt;/a&gt;"),
    },
    Case {
        template: "{{exists .spec \"containers\" 0 \"name\"}} {{exists .spec \"containers\" 5}} {{exists .spec \"nil\"}} {{exists .spec \"missing\"}} {{exists .spec}}",
        data: POD,
        strict: false,
        expected: Ok("true false false false true"),
    },
    Case {
        template: "{{exists .spec.missing}} {{exists .spec.nil}} {{exists .spec.tags 1}} {{exists .spec.tags .spec.replicas}}",
        data: POD,
        strict: false,
        expected: Ok("true true true false"),
    },
    Case { template: "{{base64decode .spec.secret}}", data: POD, strict: false, expected: Ok("hello world") },
    Case { template: "{{.spec.secret | base64decode}}", data: POD, strict: false, expected: Ok("hello world") },
    Case {
        template: "{{base64decode \"!!!\"}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <base64decode \"!!!\">: error calling base64decode: base64 decode failed: illegal base64 data at input byte 0",
        ),
    },
    Case {
        template: "{{base64decode \"aGVsbG8\"}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <base64decode \"aGVsbG8\">: error calling base64decode: base64 decode failed: illegal base64 data at input byte 4",
        ),
    },
    Case {
        template: "{{base64decode \"aGVsbA==x\"}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <base64decode \"aGVsbA==x\">: error calling base64decode: base64 decode failed: illegal base64 data at input byte 8",
        ),
    },
    Case {
        template: "{{base64decode .spec.replicas}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:20: executing \"output\" at <.spec.replicas>: wrong type for value; expected string; got int64",
        ),
    },
    Case {
        template: "{{base64decode .spec.missing}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1:20: executing \"output\" at <.spec.missing>: invalid value; expected string"),
    },
    Case {
        template: "{{base64decode 3}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1:15: executing \"output\" at <3>: expected string; found 3"),
    },
    Case {
        template: "{{call .spec.s}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <call .spec.s>: error calling call: non-function .spec.s of type string",
        ),
    },
    Case {
        template: "{{\"a\\tb\\u00e9\\x41\"}} {{`raw\\n`}} {{1.5}} {{0x1F}} {{1e3}} {{-7}} {{true}} {{0o17}} {{1_000}}",
        data: POD,
        strict: false,
        expected: Ok("a\tbéA raw\\n 1.5 31 1000 -7 true 15 1000"),
    },
    Case {
        template: "{{nil}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1:2: executing \"output\" at <nil>: nil is not a command"),
    },
    Case {
        template: "{{99999999999999999999}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: integer overflow: \"99999999999999999999\""),
    },
    Case { template: "{{.spec.tags | len | printf \"%d items\"}}", data: POD, strict: false, expected: Ok("3 items") },
    Case {
        template: "{{.metadata.name}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: bad character U+007D '}'"),
    },
    Case { template: "{{if .x}}", data: POD, strict: false, expected: Err("template: output:1: unexpected EOF") },
    Case { template: "{{end}}", data: POD, strict: false, expected: Err("template: output:1: unexpected {{end}}") },
    Case { template: "{{else}}", data: POD, strict: false, expected: Err("template: output:1: unexpected {{else}}") },
    Case {
        template: "{{range .x}}{{else}}{{else}}{{end}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: expected end; found {{else}}"),
    },
    Case {
        template: "{{foo}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: function \"foo\" not defined"),
    },
    Case {
        template: "{{$x}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: undefined variable \"$x\""),
    },
    Case {
        template: "{{.a | 3}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: non executable command in pipeline stage 2"),
    },
    Case {
        template: "{{\"unterminated}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: unterminated quoted string"),
    },
    Case { template: "{{(.a}}", data: POD, strict: false, expected: Err("template: output:1: unclosed left paren") },
    Case { template: "{{.a)}}", data: POD, strict: false, expected: Err("template: output:1: unexpected right paren") },
    Case {
        template: "{{break}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: {{break}} outside {{range}}"),
    },
    Case {
        template: "{{.a b}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: function \"b\" not defined"),
    },
    Case { template: "{{/* unclosed", data: POD, strict: false, expected: Err("template: output:1: unclosed comment") },
    Case {
        template: "line1\n{{.a\n.b +}}",
        data: POD,
        strict: false,
        expected: Err("template: output:3: illegal number syntax: \"+\""),
    },
    Case {
        template: "{{3.a}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: bad number syntax: \"3.a\""),
    },
    Case {
        template: "{{.a.b.c}}",
        data: "{\"a\":{\"b\":null}}",
        strict: false,
        expected: Err("template: output:1:4: executing \"output\" at <.a.b.c>: nil pointer evaluating interface {}.c"),
    },
    Case {
        template: "{{.a.b.c}}",
        data: "{\"a\":{\"b\":3}}",
        strict: false,
        expected: Err(
            "template: output:1:4: executing \"output\" at <.a.b.c>: can't evaluate field c in type interface {}",
        ),
    },
    Case {
        template: "x\n  {{.a.b}}",
        data: "{\"a\":\"s\"}",
        strict: false,
        expected: Err(
            "template: output:2:6: executing \"output\" at <.a.b>: can't evaluate field b in type interface {}",
        ),
    },
    Case {
        template: "{{'ab'}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: malformed character constant: 'ab'"),
    },
    Case { template: "{{\"\\q\"}}", data: POD, strict: false, expected: Err("template: output:1: invalid syntax") },
    Case {
        template: "{{define \"a\"}}x{{end}}{{define \"a\"}}y{{end}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: template: multiple definition of template \"a\""),
    },
    Case {
        template: "{{template \"x\" 1 2}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:11: executing \"output\" at <{{template \"x\" 1 2}}>: template \"x\" not defined",
        ),
    },
    Case {
        template: "{{with}}{{end}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: missing value for with"),
    },
    Case {
        template: "{{range $a, $b, $c := .x}}{{end}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1: too many declarations in range"),
    },
    Case {
        template: "{{1 2}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1:2: executing \"output\" at <1>: can't give argument to non-function 1"),
    },
    Case {
        template: "{{len}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <len>: wrong number of args for len: want 1 got 0",
        ),
    },
    Case {
        template: "{{not 1 2}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <not>: wrong number of args for not: want 1 got 2",
        ),
    },
    Case {
        template: "{{.spec.replicas 1}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:7: executing \"output\" at <.spec.replicas>: replicas is not a method but has arguments",
        ),
    },
    Case {
        template: "{{$x := 1}}{{$x 2}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1:13: executing \"output\" at <$x>: can't give argument to non-function $x"),
    },
    Case {
        template: "{{.metadata.labels.app 1}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:11: executing \"output\" at <.metadata.labels.app>: app is not a method but has arguments",
        ),
    },
    Case {
        template: "{{(1).x}}",
        data: POD,
        strict: false,
        expected: Err("template: output:1:3: executing \"output\" at <1>: can't evaluate field x in type int"),
    },
    Case {
        template: "{{index nil 1}}",
        data: POD,
        strict: false,
        expected: Err(
            "template: output:1:2: executing \"output\" at <index nil 1>: error calling index: index of untyped nil",
        ),
    },
    Case { template: "{{\"x\" | printf \"%s %s\" \"y\"}}", data: POD, strict: false, expected: Ok("y x") },
    Case {
        template: "{{.a.b.c.d}}",
        data: "{\"a\":{\"b\":{\"c\":{\"d\":[1,2.5,\"x\"]}}}}",
        strict: false,
        expected: Ok("[1 2.5 x]"),
    },
    Case {
        template: "{{printf \"%v\" .a}}",
        data: "{\"a\":[[],{},[null]]}",
        strict: false,
        expected: Ok("[[] map[] [<nil>]]"),
    },
    Case {
        template: "{{printf \"%#v\" .a}}",
        data: "{\"a\":{\"x\":[],\"y\":{},\"z\":\"s\",\"n\":1.5}}",
        strict: false,
        expected: Ok(
            "map[string]interface {}{\"n\":1.5, \"x\":[]interface {}{}, \"y\":map[string]interface {}{}, \"z\":\"s\"}",
        ),
    },
    Case {
        template: "{{printf \"%5v|%-4v|\" .a .b}}",
        data: "{\"a\":[1,2],\"b\":\"x\"}",
        strict: false,
        expected: Ok("[    1     2]|x   |"),
    },
    Case {
        template: "{{printf \"%x %X %o\" .a .a .a}}",
        data: "{\"a\":\"hi\"}",
        strict: false,
        expected: Ok("6869 6869 %!o(string=hi)"),
    },
    Case {
        template: "{{printf \"%08.3f|%+d|% d|%+.2e\" -3.14159 5 5 12345.678}}",
        data: POD,
        strict: false,
        expected: Ok("-003.142|+5| 5|+1.23e+04"),
    },
    Case { template: "{{printf \"%6.2f%%\" 12.3456}}", data: POD, strict: false, expected: Ok(" 12.35%") },
    Case {
        template: "{{printf \"%v %v %v %v\" 100000.0 1000000.0 1e-4 1e-5}}",
        data: POD,
        strict: false,
        expected: Ok("100000 1e+06 0.0001 1e-05"),
    },
    Case {
        template: "{{printf \"%.3e %.0e %g %G\" 0.0 5.0 100000000.0 1e-7}}",
        data: POD,
        strict: false,
        expected: Ok("0.000e+00 5e+00 1e+08 1E-07"),
    },
    Case {
        template: "{{printf \"%s\" .a}}",
        data: "{\"a\":{\"k\":1,\"s\":\"v\"}}",
        strict: false,
        expected: Ok("map[k:%!s(int64=1) s:v]"),
    },
    Case {
        template: "{{printf \"%d\" .a}}",
        data: "{\"a\":[1,\"x\",null]}",
        strict: false,
        expected: Ok("[1 %!d(string=x) <nil>]"),
    },
];
