// chart_render renders templates of charts/gpu-sizer with Go's text/template,
// the engine Helm uses, for tests/e2e/chart_structure.py (no Helm binary is
// available where the tests run, and only Debian's golang-go is).
//
// Usage: go run chart_render.go CHART_DIR TEMPLATE... < context.json
//
// context.json holds {"Values": {...}, "Chart": {...}, "Release": {...}} as
// the test builds them (values.yaml merged with the test's overrides). Each
// TEMPLATE (a file name under templates/) is rendered with
// templates/_helpers.tpl and printed, as `helm template` does, after a
// "# Source: TEMPLATE" line and a "---" separator.
//
// The functions are the subset of Helm's (Sprig's and its own) that the
// chart uses, with Helm's semantics for what the chart relies on: include,
// toYaml (block style, sorted keys, no trailing newline), toJson, nindent,
// indent, trim, quote, default, trunc, trimSuffix, contains, replace,
// regexMatch, regexReplaceAll, has, list, dict, fail, int, required, empty,
// kindIs. A missing value renders as "" (Helm replaces "<no value>").
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

type files struct{ dir string }

// Get returns the content of a chart file, "" when it is missing (as Helm).
func (f files) Get(name string) string {
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		return ""
	}
	return string(b)
}

func truthy(v interface{}) bool {
	if v == nil {
		return false
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Bool:
		return r.Bool()
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array:
		return r.Len() > 0
	case reflect.Int, reflect.Int64:
		return r.Int() != 0
	case reflect.Float64:
		return r.Float() != 0
	}
	return true
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./-]*$`)

// key is a mapping key as YAML reads it back: plain where it cannot be
// mistaken for another type, quoted otherwise.
func key(k string) string {
	switch strings.ToLower(k) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~":
		return scalar(k)
	}
	if plainKey.MatchString(k) {
		return k
	}
	return scalar(k)
}

func scalar(v interface{}) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		b, _ := json.Marshal(x)
		return string(b)
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// toYaml emits block YAML (lists at their key's indentation, as Helm's
// sigs.k8s.io/yaml does); strings are double-quoted JSON, which YAML reads
// the same.
func toYaml(v interface{}) string {
	var lines []string
	var emit func(v interface{}, indent string)
	emit = func(v interface{}, indent string) {
		switch x := v.(type) {
		case map[string]interface{}:
			if len(x) == 0 {
				lines = append(lines, indent+"{}")
				return
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				switch c := x[k].(type) {
				case map[string]interface{}:
					if len(c) > 0 {
						lines = append(lines, indent+key(k)+":")
						emit(c, indent+"  ")
						continue
					}
				case []interface{}:
					if len(c) > 0 {
						lines = append(lines, indent+key(k)+":")
						emit(c, indent)
						continue
					}
				}
				sub := toYaml(x[k])
				lines = append(lines, indent+key(k)+": "+sub)
			}
		case []interface{}:
			if len(x) == 0 {
				lines = append(lines, indent+"[]")
				return
			}
			for _, item := range x {
				start := len(lines)
				emit(item, indent+"  ")
				lines[start] = indent + "- " + strings.TrimPrefix(lines[start], indent+"  ")
			}
		default:
			lines = append(lines, indent+scalar(v))
		}
	}
	emit(v, "")
	return strings.Join(lines, "\n")
}

func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

func toInt(v interface{}) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case int:
		return x
	case string:
		i, _ := strconv.Atoi(x)
		return i
	}
	return 0
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: chart_render CHART_DIR TEMPLATE... < context.json")
		os.Exit(2)
	}
	chart := os.Args[1]
	var ctx map[string]interface{}
	input, err := io.ReadAll(os.Stdin)
	if err == nil {
		err = json.Unmarshal(input, &ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart_render: context:", err)
		os.Exit(2)
	}
	ctx["Files"] = files{chart}

	root := template.New("chart")
	funcs := template.FuncMap{
		"include": func(name string, data interface{}) (string, error) {
			var b strings.Builder
			err := root.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
		"toYaml":  toYaml,
		"toJson":  func(v interface{}) string { b, _ := json.Marshal(v); return string(b) },
		"nindent": func(n int, s string) string { return "\n" + indent(n, s) },
		"indent":  indent,
		"trim":    strings.TrimSpace,
		"quote": func(v ...interface{}) string {
			out := make([]string, len(v))
			for i, s := range v {
				if s == nil {
					s = ""
				}
				out[i] = strconv.Quote(fmt.Sprint(s))
			}
			return strings.Join(out, " ")
		},
		"default": func(d interface{}, v ...interface{}) interface{} {
			if len(v) == 0 || !truthy(v[0]) {
				return d
			}
			return v[0]
		},
		"trunc": func(n int, s string) string {
			if len(s) > n {
				return s[:n]
			}
			return s
		},
		"trimSuffix":      func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"contains":        func(sub, s string) bool { return strings.Contains(s, sub) },
		"replace":         func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
		"regexMatch":      func(re, s string) bool { return regexp.MustCompile(re).MatchString(s) },
		"regexReplaceAll": func(re, s, repl string) string { return regexp.MustCompile(re).ReplaceAllString(s, repl) },
		"has": func(needle interface{}, haystack []interface{}) bool {
			for _, h := range haystack {
				if reflect.DeepEqual(h, needle) {
					return true
				}
			}
			return false
		},
		"list": func(v ...interface{}) []interface{} { return v },
		"dict": func(kv ...interface{}) map[string]interface{} {
			m := map[string]interface{}{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[fmt.Sprint(kv[i])] = kv[i+1]
			}
			return m
		},
		"fail": func(msg string) (string, error) { return "", errors.New(msg) },
		"required": func(msg string, v interface{}) (interface{}, error) {
			if !truthy(v) {
				return nil, errors.New(msg)
			}
			return v, nil
		},
		"empty": func(v interface{}) bool { return !truthy(v) },
		"kindIs": func(kind string, v interface{}) bool {
			switch v.(type) {
			case map[string]interface{}:
				return kind == "map"
			case []interface{}:
				return kind == "slice"
			case string:
				return kind == "string"
			case bool:
				return kind == "bool"
			case float64:
				return kind == "float64"
			case nil:
				return kind == "invalid"
			}
			return false
		},
		"int": toInt,
	}
	root.Funcs(funcs).Option("missingkey=zero")
	tdir := filepath.Join(chart, "templates")
	helpers, err := os.ReadFile(filepath.Join(tdir, "_helpers.tpl"))
	if err == nil {
		_, err = root.New("_helpers.tpl").Parse(string(helpers))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart_render:", err)
		os.Exit(1)
	}
	for _, name := range os.Args[2:] {
		text, err := os.ReadFile(filepath.Join(tdir, name))
		if err == nil {
			_, err = root.New(name).Parse(string(text))
		}
		var out strings.Builder
		if err == nil {
			err = root.ExecuteTemplate(&out, name, ctx)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "chart_render: %s: %v\n", name, err)
			os.Exit(1)
		}
		fmt.Printf("---\n# Source: gpu-sizer/templates/%s\n%s\n",
			name, strings.ReplaceAll(out.String(), "<no value>", ""))
	}
}
