//! `capstore gen-catalog`, hidden (documented in BENCHMARKS.md, not in the help): writes a
//! synthetic catalog ([`capstore::catalog::synthetic`]) to measure loading at scale.

use capstore::catalog::synthetic::{Spec, write_catalog};

use super::args::{Args, count, number, unknown};

/// The spec of a `gen-catalog` command line.
pub(crate) fn parse(args: &[String]) -> Result<Spec, String> {
    let mut spec = Spec::default();
    let mut it = Args::new(args);
    let mut tools_given = false;
    while let Some(arg) = it.next() {
        match arg {
            "--tools" => {
                spec.tools = count(arg, it.value(arg)?, 0, 100_000_000)?;
                tools_given = true;
            }
            "--tools-per-skill" => {
                spec.tools_per_skill = count(arg, it.value(arg)?, 1, 1_000_000)?;
            }
            "--seed" => spec.seed = number(arg, it.value(arg)?)?,
            _ => return Err(unknown("gen-catalog", arg)),
        }
    }
    if !tools_given {
        return Err("gen-catalog: --tools N is required".into());
    }
    if spec.tools_per_skill == 0 {
        return Err("gen-catalog: --tools-per-skill must be at least 1".into());
    }
    Ok(spec)
}

/// `capstore gen-catalog --tools N [--tools-per-skill K] [--seed S]`: the catalog on stdout.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let spec = parse(args)?;
    let stdout = std::io::stdout().lock();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout);
    match write_catalog(&spec, &mut out).and_then(|()| std::io::Write::flush(&mut out)) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(()),
    }
}
