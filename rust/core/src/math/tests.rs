use super::*;

fn eq(a: &str, b: &str) -> bool {
    let p = ParseOptions::default();
    let (Ok(x), Ok(y)) = (parse(a, &p), parse(b, &p)) else {
        return false;
    };
    equivalent(&x, &y, &CompareOptions::default())
}

#[test]
fn numbers() {
    assert!(eq("1000", "1,000"));
    assert!(eq("1000", "1\\,000"));
    assert!(eq("1000", "1,\\!000"));
    assert!(eq("0.5", "\\frac12"));
    assert!(eq("0.4", ".4"));
    assert!(eq("1/3", "0.\\overline{3}"));
    assert!(!eq("1/3", "0.33"));
    assert!(eq("1/12", "0.0833333333333333"));
    assert!(eq("40/9", "4\\frac{4}{9}"));
    assert!(eq("2^{-99}", "\\frac{1}{2^{99}}"));
    assert!(!eq("2^{-99}", "\\frac{1}{2^{98}}"));
    assert!(!eq("10^{-20}", "0"));
    assert!(eq("2\\sqrt2", "\\sqrt8"));
    assert!(eq("\\frac{1}{\\sqrt3}", "\\frac{\\sqrt3}{3}"));
    assert!(eq("1.5e3", "1500"));
}

#[test]
fn structures() {
    assert!(eq("(1,2)", "(1, 2)"));
    assert!(!eq("(1,2)", "(2,1)"));
    assert!(eq("\\{1,2,3\\}", "\\{3,2,1\\}"));
    assert!(eq("[0,1)", "[0, 1)"));
    assert!(!eq("[0,1)", "(0,1)"));
    assert!(eq("x = 3", "3"));
    assert!(eq("y = 2x+3", "y = 3+2x"));
    assert!(!eq("x > 2", "x \\ge 2"));
    assert!(eq("x^2+2x+1", "(x+1)^2"));
    assert!(eq("\\text{Monday}", "monday"));
}

#[test]
fn budgets() {
    let p = ParseOptions::default();
    for s in ["2^{2^{2^{2^{2^{100}}}}}", "10^{10^{10}}", "9999999!"] {
        let v = parse(s, &p).unwrap();
        let one = parse("1", &p).unwrap();
        assert!(
            compare(&v, &one, &CompareOptions::default()).is_err(),
            "{s}"
        );
    }
    let deep = "(".repeat(100_000) + &")".repeat(100_000);
    assert!(parse(&deep, &p).is_err());
    let big = "9".repeat(1_000_000);
    assert!(parse(&big, &p).is_err());
}
