//! `tally plan histogram --mechanism M`: a mechanism over a public domain, calibrated, with the
//! error of one element's estimate across counts; `--report DIR` compares it with every other
//! such mechanism (and, with a population, with sample-and-threshold). Without `--mechanism`,
//! [`plan_items`] chooses over clients of several items.

use anyhow::{Result, bail};
use tally_plan::domain::{self, DomainPopulation, MechanismPlan};
use tally_plan::page;
use tally_sim::PlaceInDomain;

use crate::cli::PlanHistogramArgs;
use crate::domain_histogram::{
    build_mechanism, check_failure_probability, domain_map, domain_setting,
};
use crate::input::load_report_population;
use crate::output::{guarantee_line, print_fields, print_json, save_report};
use crate::plan_items;

pub(crate) fn run(args: &PlanHistogramArgs) -> Result<()> {
    let Some(mechanism) = args.mechanism else {
        return plan_items::run(args);
    };
    args.report.refuse_population_without_report()?;
    let map = domain_map(&args.domain, mechanism.name())?;
    check_failure_probability(&args.domain, mechanism)?;
    let Some(clients) = args.clients.filter(|&n| n > 0) else {
        bail!(
            "--mechanism {} is calibrated for the clients that report: give --clients N (at \
             least 1)",
            mechanism.name()
        );
    };
    let setting = domain_setting(&args.domain, map, clients, &args.privacy);
    // The calibration's own error, as `tally histogram` reports it.
    build_mechanism(mechanism, &setting, 0)?;
    if let Some(dir) = &args.report.report {
        let population = load_report_population(&args.report)?;
        let placed = population.as_ref().map(|p| map.apply(p)).transpose()?;
        let item_counts: Vec<u64> = population
            .iter()
            .flat_map(|p| p.item_counts().iter().map(|&(_, count)| count))
            .collect();
        let known = population
            .as_ref()
            .zip(placed.as_ref())
            .map(|(p, placed)| DomainPopulation {
                description: p.description(),
                clients: p.len() as u64,
                domain_counts: placed.true_counts(),
                item_counts: &item_counts,
                top: args.report.top,
            });
        let report = domain::build(&setting, mechanism, known);
        save_report(dir, |dir| page::domain::write(&report, dir))?;
    }
    let planned = domain::plan(mechanism, &setting);
    if args.privacy.json {
        return Ok(print_json(&planned.document())?);
    }
    let MechanismPlan::Calibrated(calibrated) = planned else {
        unreachable!("the mechanism was calibrated above");
    };
    let mut fields = vec![
        ("domain", map.to_string()),
        ("clients", setting.clients.to_string()),
        ("guarantee", guarantee_line(&calibrated.guarantee)),
    ];
    if let Some(local) = calibrated
        .local_guarantee
        .as_ref()
        .filter(|local| **local != calibrated.guarantee)
    {
        fields.push(("local guarantee", guarantee_line(local)));
    }
    if let Some(cost) = calibrated.cost {
        fields.push((
            "messages",
            format!(
                "{:.1} per client, {} bits each",
                cost.messages_per_client, cost.bits_per_message
            ),
        ));
    }
    fields.push((
        "estimate (count 0)",
        calibrated.law.map_or_else(
            || "no closed-form law: the error depends on the other elements' counts".to_owned(),
            |law| law.to_string(),
        ),
    ));
    print_fields(&format!("{} histogram plan", mechanism.name()), &fields)?;
    if !calibrated.errors.is_empty() {
        println!(
            "\n{:>12}  {:>12}  {:>12}  {:>12}",
            "true count", "bias", "std dev", "E|error|"
        );
        // The decades of the grid, and the count of every client.
        let shown = calibrated.errors.iter().filter(|e| {
            e.count == 0 || e.count == setting.clients || 10_u64.pow(e.count.ilog10()) == e.count
        });
        for row in shown {
            println!(
                "{:>12}  {:>12.3}  {:>12.3}  {:>12.3}",
                row.count,
                row.error.bias,
                row.error.standard_deviation,
                row.error.mean_absolute_error
            );
        }
    }
    Ok(())
}
