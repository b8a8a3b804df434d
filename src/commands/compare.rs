//! `wulf compare`: results against a baseline, as terminal or Markdown
//! tables, with an exit code for regression gates.

use anyhow::Result;

use crate::analysis::compare::compare;
use crate::cli::CompareArgs;
use crate::error::WulfError;
use crate::report::compare::{render, Style};
use crate::report::summary::labels;

/// Run `wulf compare`.
pub fn execute(args: &CompareArgs) -> Result<()> {
    let mut paths = vec![args.baseline.clone()];
    paths.extend(args.candidates.iter().cloned());
    let results = super::report::read_results(&paths)?;
    let names = labels(&results);
    let style = if args.markdown {
        Style::Markdown
    } else {
        Style::Text
    };
    let name = |i: usize| format!("{} ({})", names[i], paths[i].display());
    let mut failures = Vec::new();
    for i in 1..results.len() {
        if i > 1 {
            println!();
        }
        let c = compare(&results[0], &results[i], args.level);
        print!("{}", render(&c, &name(0), &name(i), style));
        if let Some(pct) = args.fail_if_slower {
            let reasons = c.regressions(pct);
            if !reasons.is_empty() {
                failures.push(format!("{}: {}", paths[i].display(), reasons.join("; ")));
            }
        }
    }
    match (args.fail_if_slower, failures.is_empty()) {
        (Some(pct), false) => Err(WulfError::Regression(format!(
            "slower than the baseline by more than {pct}%, beyond the noise: {}",
            failures.join(" | ")
        ))
        .into()),
        _ => Ok(()),
    }
}
